-- Points unqualified names of the second connection's transaction at the staging schema,
-- with the same memory for sorts and index builds as the load's own transaction.
SELECT set_config('search_path', %(schema)s, true),
       set_config('maintenance_work_mem', '512MB', true),
       set_config('work_mem', '128MB', true);
