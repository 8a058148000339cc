-- Returns the registry summary computed at load time (one row, one jsonb document).
-- Reads the one-row table graph.registry_summary; no index needed.
SELECT doc FROM graph.registry_summary;
