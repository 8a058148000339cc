-- Appends one committed load to the history.
INSERT INTO registry_meta.graph_loads (schema_version, elapsed_ms, counts)
VALUES (%(schema_version)s, %(elapsed_ms)s, %(counts)s::jsonb);
