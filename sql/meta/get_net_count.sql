-- Returns, for `python -m devtools.bench_since`: how many net changes since %(since)s the live
-- generation answers (net_counts, by its primary key).
SELECT c.added + c.removed + c.changed AS total
FROM graph.graph_info AS i
JOIN registry_meta.net_counts AS c ON c.generation = i.generation AND c.since = %(since)s;
