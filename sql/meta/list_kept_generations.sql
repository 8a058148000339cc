-- Returns every generation still kept, newest first: its number, commit time, origins, disk
-- use (measured after its load), previous, change counts (docs/api.md, Changes between generations)
-- and digest. The change columns are read through to_jsonb so that `registry status` still reads a
-- database whose migrations predate them (NULL then). registry_meta.generations is tiny; no index
-- needed.
SELECT generation, committed_at, origins, size_bytes,
       (to_jsonb(g) ->> 'previous')::bigint AS previous,
       (to_jsonb(g) ->> 'added')::bigint AS added,
       (to_jsonb(g) ->> 'removed')::bigint AS removed,
       (to_jsonb(g) ->> 'changed')::bigint AS changed,
       to_jsonb(g) ->> 'digest' AS digest
FROM registry_meta.generations AS g
WHERE dropped_at IS NULL
ORDER BY generation DESC;
