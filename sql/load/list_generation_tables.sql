-- Returns the tables of one retired generation's schema (pg_class by namespace), so that
-- load/lock_generation_tables can take them all before the schema is dropped.
SELECT relname::text
FROM pg_class
WHERE relnamespace = to_regnamespace(%(schema)s) AND relkind IN ('r', 'p', 'm')
ORDER BY relname;
