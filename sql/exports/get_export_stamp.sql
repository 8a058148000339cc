-- Returns the generation, commit time and digest of the graph in schema {graph} (one row; none when
-- that schema's graph was committed after the reading transaction's snapshot). An export
-- reads it before and after declaring its cursor, in one REPEATABLE READ transaction: the
-- same answer twice means the cursor reads that generation. The one-row graph_info table.
SELECT generation, committed_at, digest FROM {graph}.graph_info;
