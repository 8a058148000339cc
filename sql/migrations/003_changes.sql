-- Changes between generations (docs/api.md, Changes between generations): each generation remembers
-- the generation it was compared with (previous, NULL for the first) and how many origins it added,
-- removed and changed. Generations produced before this migration have no change set: NULLs.
ALTER TABLE registry_meta.generations
    ADD COLUMN previous bigint,
    ADD COLUMN added    bigint,
    ADD COLUMN removed  bigint,
    ADD COLUMN changed  bigint;

-- Every generation already kept gets an empty change set of the shape a load builds, so that
-- /registry/changes answers for it too: no changes, and counts of null (unknown) from the
-- columns above. Its graph then has what this schema version's graphs have, and says so
-- (graph_info.schema_version, which readiness checks). The change set itself, its indexes
-- and its change_lines view are made after this file, by the load's own statements
-- (registry.database.empty_change_sets).
DO $upgrade$
DECLARE
    kept name;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.origin_docs', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 3', kept);
    END LOOP;
END
$upgrade$;
