-- Returns whether the version table exists, without creating it (a dry run changes nothing).
SELECT to_regclass('registry_meta.schema_migrations') IS NOT NULL;
