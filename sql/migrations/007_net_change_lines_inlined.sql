-- The lines of net changes are built inside the statements that read them (docs/api.md, Changes
-- since any generation). PostgreSQL inlines a SQL function into the statement that calls it only
-- when its body is a single expression (no FROM) and is no less volatile than the function says.
-- Neither line function was inlined as migration 004 first made them: both were declared IMMUTABLE
-- but call STABLE functions (array_to_json, concat: their output depends on settings such as
-- DateStyle), and net_change_csv read its guarded name from a sub-select. So each line of a
-- since page or export was a call through the SQL function executor: an export since the
-- oldest since cost about 1.5 times the /registry/changes export per line (docs/performance.md),
-- with the same joins and the same concatenation otherwise. Both are STABLE now, and
-- net_change_csv one expression that writes exactly what it wrote: their definitions are
-- sql/definitions/net_change_json.sql and sql/definitions/net_change_csv.sql, applied after
-- the migrations by every upgrade and load, so this migration changes no table; it marks the
-- graphs' schema version.

-- The graphs kept say they have what this schema version's graphs have (readiness checks it).
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 7', kept.nspname);
    END LOOP;
END
$upgrade$;
