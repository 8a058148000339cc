-- Builds the net changes of the generation just numbered from every kept change set up to
-- it (registry_meta.build_net_changes, migration 004), and records the size of its change
-- set in change_log, in the load's transaction: they go live with the generation.
SELECT registry_meta.build_net_changes(i.generation) FROM graph_next.graph_info AS i;
UPDATE registry_meta.generations AS g
SET change_bytes = (SELECT coalesce(sum(pg_column_size(l.*)), 0)
                    FROM registry_meta.change_log AS l
                    WHERE l.generation = g.generation)
WHERE g.generation = (SELECT i.generation FROM graph_next.graph_info AS i);
ANALYZE registry_meta.change_log, registry_meta.net_changes, registry_meta.net_counts;
