-- The copy of `registry mirror` in a PostgreSQL database (registry/mirror/postgres_store.py,
-- docs/mirror.md), in a schema of its own: one row per origin of the generation mirrored,
-- its record the Origin as jsonb, and the one row that says which registry, generation and
-- digest it is.
CREATE SCHEMA IF NOT EXISTS registry_mirror;
CREATE TABLE IF NOT EXISTS registry_mirror.origins (
    id text PRIMARY KEY,
    record jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS registry_mirror.mirror (
    -- One row at most: its key can only be true.
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    url text NOT NULL,
    generation bigint NOT NULL,
    digest text NOT NULL,
    etag text,
    synced_at timestamptz NOT NULL
);
