-- Migration 006's step that needs a definition (registry_meta.oldest_since), run by the
-- upgrade after every migration's SQL and the definitions (registry.database.migrations):
-- the net changes kept, numbered once.
UPDATE registry_meta.net_changes AS x SET pos = r.pos
FROM (SELECT y.generation, y.id, y.until,
             row_number() OVER (PARTITION BY y.generation ORDER BY y.id) AS pos
      FROM registry_meta.net_changes AS y
      WHERE y.lo = registry_meta.oldest_since(y.generation)) AS r
WHERE x.generation = r.generation AND x.id = r.id AND x.until = r.until;
