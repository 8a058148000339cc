-- Returns the newest applied migration (one row, null when none): registry_meta.schema_migrations
-- is tiny, no index needed.
SELECT max(version) FROM registry_meta.schema_migrations;
