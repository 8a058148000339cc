-- The copy of `registry mirror` in a SQLite file (registry/mirror/sqlite_store.py,
-- docs/mirror.md): one row per origin of the generation mirrored, its record the Origin as
-- the API sent it, and the one row that says which registry, generation and digest it is.
CREATE TABLE IF NOT EXISTS origins (
    id TEXT NOT NULL,
    record TEXT NOT NULL
);
-- The ids are unique by an index of their own rather than a primary key, so that an export,
-- which writes every row, drops it and builds it once at the end from sorted ids
-- (drop_origins_index.sql, index_origins.sql) instead of inserting into it row by row in the
-- export's order, which is random by id: that halved the time of writing a million rows.
CREATE UNIQUE INDEX IF NOT EXISTS origins_by_id ON origins (id);
CREATE TABLE IF NOT EXISTS mirror (
    -- One row at most: its key can only be 1.
    one INTEGER PRIMARY KEY CHECK (one = 1),
    url TEXT NOT NULL,
    generation INTEGER NOT NULL,
    digest TEXT NOT NULL,
    etag TEXT,
    synced_at TEXT NOT NULL
);
