-- Returns the live graph's generation and the schema version it was built with (one row):
-- the one-row table graph.graph_info, no index needed. Fails when no graph was ever loaded.
SELECT generation, schema_version
FROM graph.graph_info;
