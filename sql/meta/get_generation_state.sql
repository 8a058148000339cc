-- Returns one row for generation %(generation)s: whether it was ever produced, its commit
-- time and digest, when it was dropped (null while kept), and the newest generation. Served by the
-- primary key of registry_meta.generations and the one-row graph.graph_info.
SELECT g.generation IS NOT NULL AS produced,
       g.committed_at,
       g.digest,
       g.dropped_at,
       (SELECT generation FROM graph.graph_info) AS current
FROM (SELECT) AS one
LEFT JOIN registry_meta.generations AS g ON g.generation = %(generation)s::bigint;
