-- Builds net_changes and net_counts of generation n (docs/api.md, "Changes between
-- generations"; the tables: migration 004) from the kept change sets up to n: run by the load
-- that produces n, in its transaction, once n's change set is in change_log
-- (sql/load/build_net_changes.sql), and by the upgrade that first kept change sets, for each
-- kept graph (migration 004). Each version's kind and blocks compare its hashes with the
-- record at n's; records whose texts differ but whose four blocks are equal as values (one
-- logged before records were sent with their keys sorted, docs/api.md "Digests", and one
-- after) are the same record, no net change.
--
-- From the net changes of n's previous p when p's are there (p is the live generation while
-- n loads): an origin absent from n's change set has the same record at n as at p, so its
-- rows are p's, less those whose until is not past n's oldest since s (that part of the
-- history is no longer kept), with lo raised to s; an origin in n's change set has its rows
-- computed again from change_log. Without p's net changes (the first generation, a previous
-- dropped, a database just upgraded), every origin in a kept change set is computed. So a
-- load reads the change log of its own change set's origins only, not of every kept change.
-- The rows with lo = s, those of since s, are numbered in id order (pos, migration 006) in
-- the statement that writes them, so that a page of since s is a range of net_changes_pos_idx.
-- Each origin's changes (c) are read by change_log's primary key whatever the planner
-- estimates: joined, with statistics taken before the change set was copied in (none of its
-- generation), the planner expected one row and walked the whole change set once per origin
-- in it (a load of 50,000 changes ran for minutes).
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
    -- at n (z), looked up by its id and generation (kept apart by OFFSET 0: joined, the
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
          AND (c.before_blocks = z.after_blocks) IS NOT TRUE
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
    -- The same counts per bucket of origin ids, which a page of any since starts from.
    PERFORM registry_meta.build_net_buckets(n);
END
$fn$;
