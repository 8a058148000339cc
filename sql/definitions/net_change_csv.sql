-- A net change's CSV row (id, kind, blocks, name, address: of the record at n, or of the
-- version for a removed origin) as Python's csv module writes it, the name with the
-- spreadsheet guard of sql/load/build_origin_csv.sql (a ' before a leading =, +, -, @, tab
-- or CR). The guard goes inside the quotes and never needs quoting itself, so whether to
-- quote is decided on the name alone. One expression, no FROM, and STABLE as its body is
-- (concat depends on settings): inlined into each statement that calls it, as
-- net_change_json is (migration 007 made both so; before, this one read its guarded name
-- from a sub-select and neither was inlined).
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
