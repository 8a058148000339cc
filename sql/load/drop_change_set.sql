-- Drops the change set of generation %(generation)s from change_log and marks it dropped, in
-- one statement after the load's commit, so a reader sees it whole or marked gone.
WITH gone AS (
    DELETE FROM registry_meta.change_log WHERE generation = %(generation)s::bigint
)
UPDATE registry_meta.generations
SET changes_dropped_at = now()
WHERE generation = %(generation)s::bigint;
