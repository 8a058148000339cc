-- The net changes of (m, n) as ranges of an index for the sinces consumers ask most (docs/api.md,
-- Changes since any generation), and a load that builds them from the previous generation's instead
-- of from every kept change set.
--
-- A row of generation n answers for every since m with lo <= m < until, and lo is never below
-- n's oldest since s (the load builds it so, retention keeps it so: drop_change_set.sql). So
-- the rows of since s are exactly those with lo = s (a consumer that catches up from as far
-- back as it can), and the rows of since n - 1 exactly those with until = n (a consumer that
-- polls after every load): each a contiguous range of one of these indexes, in id order,
-- read index-only, however many rows the other sinces have. Any
-- other since is the planner's pick, as before: the primary key walked in id order and
-- filtered, or net_changes_kind_idx for one kind (which keeps the planner off a sequential
-- scan and a sort when the filters look selective, as a block's does).
CREATE INDEX net_changes_lo_idx
    ON registry_meta.net_changes (generation, lo, id) INCLUDE (until, last, kind, blocks);
CREATE INDEX net_changes_kind_lo_idx
    ON registry_meta.net_changes (generation, kind, lo, id) INCLUDE (until, last, blocks);
CREATE INDEX net_changes_until_idx
    ON registry_meta.net_changes (generation, until, id) INCLUDE (lo, last, kind, blocks);

-- change_log's statistics from a small sample of its narrow columns only: the planner needs
-- its size and the spread of id and generation to keep its lookups by key (a plan chosen on
-- no statistics, before autovacuum first samples the table, may differ from one chosen
-- after, so a load refreshes them at once); the records and hashes, read whole only by key,
-- need none, and sampling them (30,000 rows, each record read out of line) took over a
-- second of a load at 100,000 origins.
ALTER TABLE registry_meta.change_log
    ALTER COLUMN generation SET STATISTICS 10,
    ALTER COLUMN id SET STATISTICS 10,
    ALTER COLUMN kind SET STATISTICS 10,
    ALTER COLUMN blocks SET STATISTICS 0,
    ALTER COLUMN before SET STATISTICS 0,
    ALTER COLUMN after SET STATISTICS 0,
    ALTER COLUMN before_hash SET STATISTICS 0,
    ALTER COLUMN after_hash SET STATISTICS 0,
    ALTER COLUMN before_blocks SET STATISTICS 0,
    ALTER COLUMN after_blocks SET STATISTICS 0,
    ALTER COLUMN before_name SET STATISTICS 0,
    ALTER COLUMN before_address SET STATISTICS 0,
    ALTER COLUMN after_name SET STATISTICS 0,
    ALTER COLUMN after_address SET STATISTICS 0;

-- The load builds a generation's net changes from the previous generation's and its own
-- change set (sql/definitions/build_net_changes.sql). Net changes built before this
-- migration get their lo raised to their oldest since once the definitions are applied
-- (sql/migrations/after_definitions/005_net_change_ranges.sql).

-- The graphs kept say they have what this schema version's graphs have (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 5', kept.nspname);
    END LOOP;
END
$upgrade$;
