-- Returns the change sets kept (docs/api.md, Changes since any generation), one row: how many, and
-- the bytes they take (NULL while none was measured). NULL, NULL when none is kept, and when the
-- database's migrations predate kept change sets (004): the columns are read through to_jsonb, so
-- that such a database answers too, not an error. For `registry status` and GET /metrics;
-- registry_meta.generations is tiny (a row per generation).
WITH kept AS (
    SELECT (to_jsonb(g) ->> 'change_bytes')::bigint AS change_bytes
    FROM registry_meta.generations AS g
    WHERE to_jsonb(g) ? 'changes_dropped_at'
      AND to_jsonb(g) ->> 'changes_dropped_at' IS NULL
)
SELECT nullif(count(*), 0) AS kept, sum(change_bytes)::bigint AS change_bytes
FROM kept;
