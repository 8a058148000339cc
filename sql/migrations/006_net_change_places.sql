-- Every page of the net changes since the oldest since costs what the first does (docs/api.md,
-- Changes since any generation): the rows of since s (lo = s, migration 005) carry their place in
-- id order (pos), so a page is a range of net_changes_pos_idx, not a walk of the range of
-- net_changes_lo_idx from its start (the last page of 10,900 net changes skipped 10,850 rows). The
-- load numbers them as it builds them; retention, which raises the oldest since, numbers them again
-- (sql/load/drop_change_set.sql). Only the rows of since s are numbered: since n - 1 and the other
-- sinces page as before.
ALTER TABLE registry_meta.net_changes ADD COLUMN pos bigint;

-- The net changes kept, numbered once.
UPDATE registry_meta.net_changes AS x SET pos = r.pos
FROM (SELECT y.generation, y.id, y.until,
             row_number() OVER (PARTITION BY y.generation ORDER BY y.id) AS pos
      FROM registry_meta.net_changes AS y
      WHERE y.lo = registry_meta.oldest_since(y.generation)) AS r
WHERE x.generation = r.generation AND x.id = r.id AND x.until = r.until;

CREATE INDEX net_changes_pos_idx ON registry_meta.net_changes (generation, pos)
    INCLUDE (id, until, last, kind, blocks) WHERE pos IS NOT NULL;

-- Builds net_changes and net_counts of generation n as migration 005's, numbering the rows of
-- since s in the same statement that writes them, and reading each origin's changes (c) by
-- change_log's primary key whatever the planner estimates: joined, with statistics taken
-- before the change set was copied in (none of its generation), the planner expected one row
-- and walked the whole change set once per origin in it (a load of 50,000 changes ran for
-- minutes).
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
    -- The rows kept from p (kept): those of origins absent from n's change set, ended after s,
    -- lo raised to s. The origins computed again (k): n's change set's, or every origin in a
    -- kept change set up to n; their changes after s (c), each one's lo and last; the record
    -- at n (z), looked up by change_log's primary key (kept apart by OFFSET 0: joined, the
    -- planner may hash a whole read of change_log, the first change set's million rows
    -- included). The rows with lo = s, those of since s, are numbered in id order (pos).
    INSERT INTO registry_meta.net_changes (generation, id, lo, until, last, kind, blocks, pos)
    WITH kept AS (
        SELECT x.id, greatest(x.lo, s) AS lo, x.until, x.last, x.kind, x.blocks
        FROM registry_meta.net_changes AS x
        WHERE incremental AND x.generation = p AND x.until > s
          AND NOT EXISTS (SELECT FROM registry_meta.change_log AS l
                          WHERE l.generation = n AND l.id = x.id)
    ), k AS (
        SELECT l.id FROM registry_meta.change_log AS l WHERE incremental AND l.generation = n
        UNION ALL
        SELECT DISTINCT l.id FROM registry_meta.change_log AS l
        WHERE NOT incremental AND l.generation > s AND l.generation <= n
    ), c AS (
        SELECT l.id, l.generation, l.before_hash, l.before_blocks,
               coalesce(lag(l.generation) OVER w, s) AS lo,
               max(l.generation) OVER (PARTITION BY l.id) AS last
        FROM k
        CROSS JOIN LATERAL (
            SELECT v.id, v.generation, v.before_hash, v.before_blocks
            FROM registry_meta.change_log AS v
            WHERE v.id = k.id AND v.generation > s AND v.generation <= n
            OFFSET 0) AS l
        WINDOW w AS (PARTITION BY l.id ORDER BY l.generation)
    ), computed AS (
    SELECT c.id, c.lo, c.generation AS until, c.last,
           CASE WHEN c.before_hash IS NULL THEN 'added'
                WHEN z.after_hash IS NULL THEN 'removed'
                ELSE 'changed' END AS kind,
           CASE WHEN c.before_hash IS NULL OR z.after_hash IS NULL THEN '{}'::text[]
                ELSE array_remove(ARRAY[
                    CASE WHEN c.before_blocks[1] IS DISTINCT FROM z.after_blocks[1]
                         THEN 'origin' END,
                    CASE WHEN c.before_blocks[2] IS DISTINCT FROM z.after_blocks[2]
                         THEN 'governance' END,
                    CASE WHEN c.before_blocks[3] IS DISTINCT FROM z.after_blocks[3]
                         THEN 'bans' END,
                    CASE WHEN c.before_blocks[4] IS DISTINCT FROM z.after_blocks[4]
                         THEN 'presentations' END], NULL) END AS blocks
    FROM c
    CROSS JOIN LATERAL (
        SELECT v.after_hash, v.after_blocks
        FROM registry_meta.change_log AS v
        WHERE v.id = c.id AND v.generation = c.last
        OFFSET 0) AS z
    WHERE c.before_hash IS DISTINCT FROM z.after_hash
    ), built AS (
        SELECT * FROM kept
        UNION ALL
        SELECT * FROM computed
    )
    SELECT n, b.id, b.lo, b.until, b.last, b.kind, b.blocks,
           CASE WHEN b.lo = s THEN row_number() OVER (PARTITION BY b.lo = s ORDER BY b.id) END
    FROM built AS b;
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

-- The graphs kept say they have what this schema version's graphs have (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 6', kept.nspname);
    END LOOP;
END
$upgrade$;
