-- Builds the net changes of the generation just numbered (registry_meta.build_net_changes,
-- sql/definitions/build_net_changes.sql: from the previous generation's and this change set),
-- and records the size of its change set in change_log, in the load's transaction: they go
-- live with the generation. Then refreshes the statistics of the net changes, whose pages and
-- exports the planner picks ranges of indexes for: at once, so that a plan never depends on
-- whether autovacuum has sampled the table yet (change_log's were taken as the change set was
-- copied in: record_change_log.sql).
SELECT registry_meta.build_net_changes(i.generation) FROM graph_next.graph_info AS i;
UPDATE registry_meta.generations AS g
SET change_bytes = (SELECT coalesce(sum(pg_column_size(l.*)), 0)
                    FROM registry_meta.change_log AS l
                    WHERE l.generation = g.generation)
WHERE g.generation = (SELECT i.generation FROM graph_next.graph_info AS i);
ANALYZE registry_meta.net_changes, registry_meta.net_counts;
