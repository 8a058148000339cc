-- Every page of the net changes since the oldest since costs what the first does (docs/api.md,
-- Changes since any generation): the rows of since s (lo = s, migration 005) carry their place in
-- id order (pos), so a page is a range of net_changes_pos_idx, not a walk of the range of
-- net_changes_lo_idx from its start (the last page of 10,900 net changes skipped 10,850 rows). The
-- load numbers them as it builds them; retention, which raises the oldest since, numbers them again
-- (sql/load/drop_change_set.sql). Only the rows of since s are numbered: since n - 1 and the other
-- sinces page as before.
ALTER TABLE registry_meta.net_changes ADD COLUMN pos bigint;

CREATE INDEX net_changes_pos_idx ON registry_meta.net_changes (generation, pos)
    INCLUDE (id, until, last, kind, blocks) WHERE pos IS NOT NULL;

-- The load numbers the rows of since s as it builds them
-- (sql/definitions/build_net_changes.sql); the net changes kept are numbered once the
-- definitions are applied (sql/migrations/after_definitions/006_net_change_places.sql).

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
