-- Migration 011's step that needs a definition (registry_meta.build_net_buckets), run by the
-- upgrade after every migration's SQL and the definitions (registry.database.migrations): the
-- buckets of every generation whose net changes are kept.
SELECT registry_meta.build_net_buckets(k.generation)
FROM (SELECT DISTINCT x.generation FROM registry_meta.net_counts AS x) AS k;
