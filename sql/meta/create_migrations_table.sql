-- The version table: one row per applied migration file.
CREATE SCHEMA IF NOT EXISTS registry_meta;
CREATE TABLE IF NOT EXISTS registry_meta.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
