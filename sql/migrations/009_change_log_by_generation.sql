-- The records of a since page or export are read from change_log by (generation, id). Each
-- line looks up its record by both, and change_log's primary key is (id, generation) (by id,
-- for an origin's history), whose entries for one generation lie one in each leaf page
-- among every other generation's, the first change set's million included. A since export
-- touched a leaf page of it per line. Within (generation, id) the entries of one change
-- set are adjacent, in the order the lines are read. At 1,000,000 origins after 10 twins,
-- the statements of the export since the oldest since went from x1.07 to x1.10 of the
-- /registry/changes export per line to x0.88 to x0.92, and through the service (best of 12) from
-- x1.17 to x0.99 (docs/performance.md). The index on generation alone (retention's and
-- the change bytes' reads of one change set) is this one's leading column: it goes.
DROP INDEX IF EXISTS registry_meta.change_log_generation_idx;
CREATE INDEX IF NOT EXISTS change_log_generation_id_idx ON registry_meta.change_log (generation, id);

-- The graphs kept say they have what this schema version's graphs have (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 9', kept.nspname);
    END LOOP;
END
$upgrade$;
