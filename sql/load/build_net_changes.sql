-- Builds the net changes of the generation just numbered (registry_meta.build_net_changes,
-- migration 005: from the previous generation's and this change set), and records the size
-- of its change set in change_log, in the load's transaction: they go live with the
-- generation. Then refreshes the statistics of the net changes, whose pages and exports the
-- planner picks ranges of indexes for. Not change_log's: it is read by its keys only (one
-- change set by generation, one origin's versions by id), which need no statistics, and
-- sampling it (30,000 rows of a table that holds the first change set's million records)
-- took over a second of a load at 100,000 origins; autovacuum refreshes them as it grows.
SELECT registry_meta.build_net_changes(i.generation) FROM graph_next.graph_info AS i;
UPDATE registry_meta.generations AS g
SET change_bytes = (SELECT coalesce(sum(pg_column_size(l.*)), 0)
                    FROM registry_meta.change_log AS l
                    WHERE l.generation = g.generation)
WHERE g.generation = (SELECT i.generation FROM graph_next.graph_info AS i);
ANALYZE registry_meta.net_changes, registry_meta.net_counts;
