-- The records of change_log stay in their rows (docs/api.md, Changes since any generation): a net
-- change's line is read with the row its primary key finds, not from TOAST besides. Migration 004
-- stored them out of line past 128 bytes (storage EXTERNAL) to keep a narrow heap for the load's
-- net changes, which since migration 005 read only their own change set's rows, by key. A row of
-- one record (added, removed, every row of a database's first change set) is mostly under
-- PostgreSQL's 2 KB threshold and was in line anyway; a changed origin's row, two records,
-- went to TOAST past it, and each of its lines in a since page or export then cost two more
-- index probes and heap reads there. At 200,000 origins after 10 twins, the statements of
-- the export since the oldest since measured x1.27 of the /registry/changes export per line with
-- change_log as loaded, x1.26 to x1.29 after VACUUM FULL alone, and x1.05 to x1.07 with every
-- record in its row (docs/performance.md). A row now stays whole up to the most PostgreSQL
-- allows (toast_tuple_target 8160, a page), uncompressed, so no load pays for compression;
-- only a record too large for a page is compressed, then moved out of line. Rows written
-- before this migration keep their records where they are, and retention ages them out.
ALTER TABLE registry_meta.change_log SET (toast_tuple_target = 8160);
ALTER TABLE registry_meta.change_log
    ALTER COLUMN before SET STORAGE MAIN,
    ALTER COLUMN after SET STORAGE MAIN;

-- The graphs kept say they have what this schema version's graphs have (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 8', kept.nspname);
    END LOOP;
END
$upgrade$;
