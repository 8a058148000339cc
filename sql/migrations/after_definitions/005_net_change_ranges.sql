-- Migration 005's step that needs a definition (registry_meta.oldest_since), run by the
-- upgrade after every migration's SQL and the definitions (registry.database.migrations).
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
