-- Drops the change set of generation %(generation)s from change_log and marks it dropped, in
-- one statement after the load's commit, so a reader sees it whole or marked gone. The
-- moment is never before the newest commit time, as in mark_generation_dropped.sql.
WITH gone AS (
    DELETE FROM registry_meta.change_log WHERE generation = %(generation)s::bigint
)
UPDATE registry_meta.generations
SET changes_dropped_at = greatest(
    now(), (SELECT max(g.committed_at) FROM registry_meta.generations AS g))
WHERE generation = %(generation)s::bigint;
