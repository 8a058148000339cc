-- Returns which of the registry's own tables exist (one row): to_regclass, no table scan.
-- A database never set up has none; one set up but never loaded has no graph_info.
SELECT to_regclass('registry_meta.schema_migrations') IS NOT NULL AS migrated,
       to_regclass('graph.graph_info') IS NOT NULL AS loaded,
       to_regclass('registry_meta.reader_roles') IS NOT NULL AS has_reader_roles,
       to_regclass('registry_meta.generations') IS NOT NULL AS has_generations;
