-- Proves that a new connection reaches a live server: through PgBouncer a login succeeds on
-- the pooler's word alone, even while the server behind it is down. Returns one row, no table.
SELECT 1;
