-- Returns the disk use in bytes of every table of one schema, indexes and TOAST included
-- (one row); the catalogs pg_class and pg_namespace.
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS size_bytes
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'm', 'p');
