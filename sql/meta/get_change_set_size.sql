-- Returns the disk use of the live generation's change set (changes, change_blocks,
-- change_counts and origin_doc_hashes: every table, index and TOAST table) and of the
-- whole generation, for
-- `python -m devtools.bench_changes`.
SELECT coalesce(sum(pg_total_relation_size(c.oid))
                FILTER (WHERE c.relname IN ('changes', 'change_blocks', 'change_counts',
                                            'origin_doc_hashes')), 0),
       coalesce(sum(pg_total_relation_size(c.oid)), 0)
FROM pg_class AS c
WHERE c.relnamespace = 'graph'::regnamespace AND c.relkind = 'r';
