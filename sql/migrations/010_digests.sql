-- The digest of every generation (docs/api.md, "Digests"): the sum modulo 2^256 of the
-- SHA-256 of each of its records' canonical form (registry.digest). A load computes it as it
-- renders the records and keeps it in its graph's graph_info, which every read returns with
-- the generation, and in registry_meta.generations, which outlives the graph. This adds the
-- column to both; registry.database.digests then computes it for every graph still kept,
-- from its stored records, in the same transaction (registry.database.migrations runs it
-- after this file). A generation whose graph is gone stays NULL: nothing is left to compute
-- it from.
ALTER TABLE registry_meta.generations ADD COLUMN IF NOT EXISTS digest text;

-- The graphs kept get the column, and say they have what this schema version's graphs have
-- (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('ALTER TABLE %I.graph_info ADD COLUMN IF NOT EXISTS digest text',
                       kept.nspname);
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 10', kept.nspname);
    END LOOP;
END
$upgrade$;
