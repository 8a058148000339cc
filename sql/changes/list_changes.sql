-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, the total
-- of its changes, and the page (changes offset+1 .. offset+limit by origin id: one JSON array
-- text), with the generation's previous and whole-generation counts (docs/api.md, Changes between
-- generations). A page is a range of the primary key of changes, so the last page costs what the
-- first does.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT coalesce(sum(n), 0) FROM {graph}.change_counts WHERE block = '')::bigint AS total,
       p.returned,
       p.records,
       g.previous, g.added, g.removed, g.changed
FROM {graph}.graph_info AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(c.line, ',' ORDER BY c.pos), '') || ']' AS records
              FROM {graph}.change_lines AS c
              WHERE c.pos > %(offset)s::bigint
                AND c.pos <= %(offset)s::bigint + %(limit)s::integer) AS p;
