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

-- Builds net_changes and net_counts of generation n (see migration 004), from the net changes
-- of n's previous p when p's are there (p is the live generation while n loads): an origin
-- absent from n's change set has the same record at n as at p, so its rows are p's, less
-- those whose until is not past n's oldest since s (that part of the history is no longer
-- kept), with lo raised to s; an origin in n's change set has its rows computed again from
-- change_log, as migration 004 computes every origin's. Without p's net changes (the first
-- generation, a previous dropped, a database just upgraded), every origin is computed. So a
-- load reads the change log of its own change set's origins only, not of every kept change.
CREATE OR REPLACE FUNCTION registry_meta.build_net_changes(n bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    p bigint := (SELECT g.previous FROM registry_meta.generations AS g WHERE g.generation = n);
    s bigint := registry_meta.oldest_since(n);
    incremental boolean;
BEGIN
    DELETE FROM registry_meta.net_changes WHERE generation = n;
    DELETE FROM registry_meta.net_counts WHERE generation = n;
    incremental := p IS NOT NULL AND EXISTS (
        SELECT FROM registry_meta.net_counts AS c WHERE c.generation = p AND c.since = p);
    IF incremental THEN
        INSERT INTO registry_meta.net_changes (generation, id, lo, until, last, kind, blocks)
        SELECT n, x.id, greatest(x.lo, s), x.until, x.last, x.kind, x.blocks
        FROM registry_meta.net_changes AS x
        WHERE x.generation = p AND x.until > s
          AND NOT EXISTS (SELECT FROM registry_meta.change_log AS l
                          WHERE l.generation = n AND l.id = x.id);
    END IF;
    -- The origins computed again (k): n's change set's, or every origin in a kept change set
    -- up to n; their changes after s (c), each one's lo and last; the record at n (z), looked
    -- up by change_log's primary key (kept apart by OFFSET 0: joined, the planner may hash a
    -- whole read of change_log, the first change set's million rows included).
    INSERT INTO registry_meta.net_changes (generation, id, lo, until, last, kind, blocks)
    WITH k AS (
        SELECT l.id FROM registry_meta.change_log AS l WHERE incremental AND l.generation = n
        UNION ALL
        SELECT DISTINCT l.id FROM registry_meta.change_log AS l
        WHERE NOT incremental AND l.generation > s AND l.generation <= n
    ), c AS (
        SELECT l.id, l.generation, l.before_hash, l.before_blocks,
               coalesce(lag(l.generation) OVER w, s) AS lo,
               max(l.generation) OVER (PARTITION BY l.id) AS last
        FROM k
        JOIN registry_meta.change_log AS l
            ON l.id = k.id AND l.generation > s AND l.generation <= n
        WINDOW w AS (PARTITION BY l.id ORDER BY l.generation)
    )
    SELECT n, c.id, c.lo, c.generation, c.last,
           CASE WHEN c.before_hash IS NULL THEN 'added'
                WHEN z.after_hash IS NULL THEN 'removed'
                ELSE 'changed' END,
           CASE WHEN c.before_hash IS NULL OR z.after_hash IS NULL THEN '{}'::text[]
                ELSE array_remove(ARRAY[
                    CASE WHEN c.before_blocks[1] IS DISTINCT FROM z.after_blocks[1]
                         THEN 'origin' END,
                    CASE WHEN c.before_blocks[2] IS DISTINCT FROM z.after_blocks[2]
                         THEN 'governance' END,
                    CASE WHEN c.before_blocks[3] IS DISTINCT FROM z.after_blocks[3]
                         THEN 'bans' END,
                    CASE WHEN c.before_blocks[4] IS DISTINCT FROM z.after_blocks[4]
                         THEN 'presentations' END], NULL) END
    FROM c
    CROSS JOIN LATERAL (
        SELECT v.after_hash, v.after_blocks
        FROM registry_meta.change_log AS v
        WHERE v.id = c.id AND v.generation = c.last
        OFFSET 0) AS z
    WHERE c.before_hash IS DISTINCT FROM z.after_hash;
    -- The counts for every since: a running sum of +1 where a row begins to count (lo) and
    -- -1 where it stops (until), over the produced generations from the oldest since to n.
    INSERT INTO registry_meta.net_counts
        (generation, since, added, removed, changed, origin, governance, bans, presentations)
    WITH events AS (
        SELECT x.lo AS at, 1 AS d, x.kind, x.blocks
        FROM registry_meta.net_changes AS x WHERE x.generation = n
        UNION ALL
        SELECT x.until, -1, x.kind, x.blocks
        FROM registry_meta.net_changes AS x WHERE x.generation = n
    ), steps AS (
        SELECT at,
               coalesce(sum(d) FILTER (WHERE kind = 'added'), 0) AS added,
               coalesce(sum(d) FILTER (WHERE kind = 'removed'), 0) AS removed,
               coalesce(sum(d) FILTER (WHERE kind = 'changed'), 0) AS changed,
               coalesce(sum(d) FILTER (WHERE 'origin' = ANY (blocks)), 0) AS origin,
               coalesce(sum(d) FILTER (WHERE 'governance' = ANY (blocks)), 0) AS governance,
               coalesce(sum(d) FILTER (WHERE 'bans' = ANY (blocks)), 0) AS bans,
               coalesce(sum(d) FILTER (WHERE 'presentations' = ANY (blocks)), 0)
                   AS presentations
        FROM events GROUP BY at
    )
    SELECT n, g.generation,
           coalesce(sum(t.added), 0), coalesce(sum(t.removed), 0), coalesce(sum(t.changed), 0),
           coalesce(sum(t.origin), 0), coalesce(sum(t.governance), 0),
           coalesce(sum(t.bans), 0), coalesce(sum(t.presentations), 0)
    FROM registry_meta.generations AS g
    LEFT JOIN steps AS t ON t.at <= g.generation
    WHERE g.generation >= s AND g.generation <= n
    GROUP BY g.generation;
END
$fn$;

-- Each generation's net changes keep lo never below its oldest since, and retention now keeps
-- it so as it raises the oldest since (sql/load/drop_change_set.sql). Those built before lost
-- it whenever change sets were dropped after their load: raise them once.
WITH s AS (
    SELECT k.generation, registry_meta.oldest_since(k.generation) AS since
    FROM (SELECT DISTINCT x.generation FROM registry_meta.net_changes AS x) AS k
), ended AS (
    DELETE FROM registry_meta.net_changes AS x
    USING s WHERE x.generation = s.generation AND x.until <= s.since
)
UPDATE registry_meta.net_changes AS x SET lo = s.since
FROM s
WHERE x.generation = s.generation AND x.lo < s.since AND x.until > s.since;

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
