-- The copy of `registry mirror` in a SQLite file (registry/mirror/sqlite_store.py,
-- docs/mirror.md): one row per origin of the generation mirrored, its record the Origin as
-- the API sent it, and the one row that says which registry, generation and digest it is.
CREATE TABLE IF NOT EXISTS origins (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mirror (
    -- One row at most: its key can only be 1.
    one INTEGER PRIMARY KEY CHECK (one = 1),
    url TEXT NOT NULL,
    generation INTEGER NOT NULL,
    digest TEXT NOT NULL,
    etag TEXT,
    synced_at TEXT NOT NULL
);
