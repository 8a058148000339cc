-- A net change as the API sends it (docs/api.md, "Changes between generations"): the JSON
-- object of changes[] and of an NDJSON export, from its origin id, kind, blocks and the two
-- records (before: the version's record, kept as the before of the change that ended it;
-- after: the record at n, kept as the after of the origin's last change up to n), as stored
-- text. One expression, no FROM, and STABLE as its body is (array_to_json depends on settings
-- such as DateStyle): PostgreSQL inlines such a SQL function into each statement that calls it
-- (sql/changes/*net_changes*.sql), so no line is a call through the SQL function executor.
-- Declared IMMUTABLE, as it was before migration 007, it was never inlined.
CREATE OR REPLACE FUNCTION registry_meta.net_change_json(
    id uuid, kind text, blocks text[], before text, after text
) RETURNS text
LANGUAGE sql STABLE AS $fn$
    SELECT '{"id":"svc:origin:' || id::text || '","kind":"' || kind || '","blocks":'
           || array_to_json(blocks)::text || ',"before":' || coalesce(before, 'null')
           || ',"after":' || coalesce(after, 'null') || '}'
$fn$;
