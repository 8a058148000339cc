-- Returns one row: the generation, commit time and digest of the graph in schema {graph}, and
-- the registry summary computed at load time (one jsonb document).
-- Reads the one-row tables {graph}.graph_info and {graph}.registry_summary; no index needed.
SELECT i.generation, i.committed_at, i.digest, s.doc
FROM {graph}.graph_info AS i, {graph}.registry_summary AS s;
