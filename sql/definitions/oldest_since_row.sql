-- The oldest since of generation n (docs/api.md, "Changes between generations") and when it
-- became so, as one row: the smallest m such that the change set of every generation after m,
-- up to n, is kept. That is the newest generation up to n whose change set is not kept
-- (since), with the moment it was dropped (dropped_at); when every one is kept, the first
-- generation ever committed and NULL; NULL and NULL when none was. The one place this is
-- written: oldest_since returns its since, and the statements that need it per request read
-- this row directly. A set-returning SQL function, STABLE, not STRICT, of one SELECT:
-- PostgreSQL inlines it into the statement that reads it in FROM (a subquery planned with the
-- statement), where a scalar call such as oldest_since(n), whose body has sub-selects, is
-- never inlined and is planned again at each use (sql/changes/list_net_changes.sql,
-- sql/origins/get_origin_history.sql). Both generations are read by registry_meta.generations'
-- primary key: a row per load.
CREATE OR REPLACE FUNCTION registry_meta.oldest_since_row(n bigint)
RETURNS TABLE (since bigint, dropped_at timestamptz)
LANGUAGE sql STABLE AS $fn$
    SELECT coalesce(d.generation, (SELECT min(g.generation) FROM registry_meta.generations AS g)),
           d.changes_dropped_at
    FROM (SELECT) AS one
    LEFT JOIN LATERAL (
        SELECT g.generation, g.changes_dropped_at
        FROM registry_meta.generations AS g
        WHERE g.generation <= n AND g.changes_dropped_at IS NOT NULL
        ORDER BY g.generation DESC
        LIMIT 1
    ) AS d ON true
$fn$;
