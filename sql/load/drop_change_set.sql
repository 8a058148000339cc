-- Drops the change set of generation %(generation)s from change_log and marks it dropped, in
-- one statement after the load's commit, so a reader sees it whole or marked gone. The
-- moment is never before the newest commit time, as in mark_generation_dropped.sql.
-- The oldest since of every kept generation from it on becomes it (g): their net changes
-- keep lo never below their oldest since (migration 005), so the rows that ended by g go
-- (they answered only for sinces now gone) and those that began before it begin at g. So
-- the net changes since the oldest since stay the range lo = g of net_changes_lo_idx, and
-- those rows, the ones that began at g among them, are numbered again in id order (pos,
-- migration 006), so that a page of them is still a range of net_changes_pos_idx.
WITH gone AS (
    DELETE FROM registry_meta.change_log WHERE generation = %(generation)s::bigint
), buckets AS (
    -- The counts of the sinces now gone; those of later sinces stay as they are (a row that
    -- ends by g, or begins before it, answered no since from g on differently).
    DELETE FROM registry_meta.net_buckets WHERE since < %(generation)s::bigint
), ended AS (
    DELETE FROM registry_meta.net_changes
    WHERE generation >= %(generation)s::bigint AND until <= %(generation)s::bigint
), raised AS (
    UPDATE registry_meta.net_changes AS x SET lo = %(generation)s::bigint, pos = r.pos
    FROM (SELECT y.generation, y.id, y.until,
                 row_number() OVER (PARTITION BY y.generation ORDER BY y.id) AS pos
          FROM registry_meta.net_changes AS y
          WHERE y.generation >= %(generation)s::bigint AND y.lo <= %(generation)s::bigint
            AND y.until > %(generation)s::bigint) AS r
    WHERE x.generation = r.generation AND x.id = r.id AND x.until = r.until
)
UPDATE registry_meta.generations
SET changes_dropped_at = greatest(
    now(), (SELECT max(g.committed_at) FROM registry_meta.generations AS g))
WHERE generation = %(generation)s::bigint;
