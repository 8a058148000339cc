-- Opens the read-only transaction of one request through a transaction-mode pooler
-- (PgBouncer), where startup options cannot carry session settings. No table, no index.
BEGIN READ ONLY;
