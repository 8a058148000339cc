-- Returns the registry summary computed at load time (one row, one jsonb document).
SELECT doc FROM graph.registry_summary;
