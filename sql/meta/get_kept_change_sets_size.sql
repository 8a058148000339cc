-- Returns, for `python -m devtools.bench_since`: how many change sets are kept, the bytes of
-- their rows (change_bytes, as each load measured it), the disk use of the kept change sets
-- and net changes (every table and index of change_log, net_changes, net_counts and
-- net_buckets), and of
-- the kept graphs (every table, index and TOAST table of their schemas), and how many graphs
-- are kept.
SELECT (SELECT count(*) FROM registry_meta.generations WHERE changes_dropped_at IS NULL),
       (SELECT coalesce(sum(change_bytes), 0) FROM registry_meta.generations
        WHERE changes_dropped_at IS NULL),
       pg_total_relation_size('registry_meta.change_log'),
       pg_total_relation_size('registry_meta.net_changes')
           + pg_total_relation_size('registry_meta.net_counts')
           + pg_total_relation_size('registry_meta.net_buckets'),
       (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
        FROM pg_class AS c
        JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE (n.nspname = 'graph' OR n.nspname LIKE 'graph\_g%') AND c.relkind = 'r'),
       (SELECT count(*) FROM registry_meta.generations WHERE dropped_at IS NULL);
