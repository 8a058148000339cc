-- Returns when the live graph was loaded, how many origins it holds and the schema version it
-- was built with (one row): the one-row table graph.graph_info, no index needed. Fails when
-- no graph was ever loaded.
SELECT loaded_at, (counts ->> 'origin')::bigint AS origins, schema_version
FROM graph.graph_info;
