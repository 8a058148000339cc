-- Returns the pages of the read model of the generation in schema %(schema)s and how many of
-- them are all-visible, as the last VACUUM of each table counted them (pg_class): its four
-- tables, and the net changes of every kept generation (registry_meta, docs/api.md, Changes since
-- any generation); no row when the schema no longer exists.
SELECT coalesce(sum(c.relpages), 0)::bigint AS pages,
       coalesce(sum(least(c.relallvisible, c.relpages)), 0)::bigint AS all_visible
FROM pg_namespace AS n
LEFT JOIN pg_class AS c
    ON (c.relnamespace = n.oid
        AND c.relname IN ('origin_rows', 'origin_docs', 'origin_csv', 'origin_search'))
    OR c.oid IN (to_regclass('registry_meta.net_changes'), to_regclass('registry_meta.net_counts'))
WHERE n.nspname = %(schema)s
GROUP BY n.oid;
