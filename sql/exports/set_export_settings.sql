-- Exempts the open export transaction from idle_in_transaction_session_timeout: between two
-- batches it waits while the worker writes to a client that may read slowly (docs/export.md,
-- Capacity); the worker's send timeout bounds that wait instead. Returns one row. No table, no
-- index.
SELECT set_config('idle_in_transaction_session_timeout', '0', true);
