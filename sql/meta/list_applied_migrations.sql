-- Returns the version numbers of the migrations already applied.
SELECT version FROM registry_meta.schema_migrations ORDER BY version;
