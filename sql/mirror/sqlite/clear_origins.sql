-- An export replaces every row (after drop_origins_index.sql).
DELETE FROM origins;
