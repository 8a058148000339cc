-- Returns how generation %(generation)s differs from its previous (docs/api.md, Changes between
-- generations): the origins it added, removed and changed (one row; none for a generation never
-- produced). NULLs for a generation loaded before change sets were recorded; the columns are read
-- through to_jsonb so that a database whose migrations predate them answers NULLs too, not an
-- error. For GET /metrics; registry_meta.generations is tiny, its key finds the row.
SELECT (to_jsonb(g) ->> 'added')::bigint AS added,
       (to_jsonb(g) ->> 'removed')::bigint AS removed,
       (to_jsonb(g) ->> 'changed')::bigint AS changed
FROM registry_meta.generations AS g
WHERE generation = %(generation)s;
