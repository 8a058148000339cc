-- Returns, for `python -m devtools.bench_since`: the live generation, its oldest since, the
-- total of the net changes since then, and the count of its own change set (docs/api.md, Changes
-- between generations).
SELECT i.generation,
       registry_meta.oldest_since(i.generation),
       (SELECT c.added + c.removed + c.changed FROM registry_meta.net_counts AS c
        WHERE c.generation = i.generation
          AND c.since = registry_meta.oldest_since(i.generation)),
       (SELECT g.added + g.removed + g.changed FROM registry_meta.generations AS g
        WHERE g.generation = i.generation)
FROM graph.graph_info AS i;
