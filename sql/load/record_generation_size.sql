-- Records the disk use of the live generation: every table, index and TOAST table of schema
-- graph (pg_total_relation_size of each table), after the load's VACUUM.
UPDATE registry_meta.generations
SET size_bytes = (
    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
    FROM pg_class AS c
    WHERE c.relnamespace = 'graph'::regnamespace AND c.relkind = 'r')
WHERE generation = (SELECT generation FROM graph.graph_info);
