-- Sets the request's time budget, idle limit, serial plans and no JIT for the open transaction only
-- (set_config with is_local: SET LOCAL with parameters). Returns one row. No table, no index.
SELECT
    set_config('statement_timeout', %(statement_timeout)s, true),
    set_config('idle_in_transaction_session_timeout', %(idle_in_transaction_session_timeout)s, true),
    set_config('max_parallel_workers_per_gather', %(max_parallel_workers_per_gather)s, true),
    set_config('jit', %(jit)s, true);
