-- The lines of net changes are built inside the statements that read them (docs/api.md, Changes
-- since any generation). PostgreSQL inlines a SQL function into the statement that calls it only
-- when its body is a single expression (no FROM) and is no less volatile than the function says.
-- Neither function of migration 004 was inlined: both were declared IMMUTABLE but call STABLE
-- functions (array_to_json, concat: their output depends on settings such as DateStyle),
-- and net_change_csv read its guarded name from a sub-select. So each line of a since page or
-- export was a call through the SQL function executor: an export since the oldest since cost
-- about 1.5 times the /registry/changes export per line (docs/performance.md), with the same joins
-- and the same concatenation otherwise. Both are STABLE now, which is what their bodies are,
-- and net_change_csv one expression that writes exactly what it wrote: the spreadsheet guard
-- (a ' before a leading =, +, -, @, tab or CR) goes inside the quotes, and the guard never
-- needs quoting itself, so whether to quote is decided on the name alone.
ALTER FUNCTION registry_meta.net_change_json(uuid, text, text[], text, text) STABLE;
CREATE OR REPLACE FUNCTION registry_meta.net_change_csv(
    id uuid, kind text, blocks text[], name text, address text
) RETURNS text
LANGUAGE sql STABLE AS $fn$
    SELECT concat('svc:origin:' || id::text, ',', kind, ',', array_to_string(blocks, ';'), ',',
                  CASE WHEN name ~ E'[",\r\n]'
                       THEN '"' || CASE WHEN left(name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                                        THEN '''' ELSE '' END
                            || replace(name, '"', '""') || '"'
                       ELSE CASE WHEN left(name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                                 THEN '''' ELSE '' END || name END, ',',
                  address, E'\r\n')
$fn$;

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
