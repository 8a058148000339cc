-- Returns the generations whose change sets are kept past the newest %(keep)s, oldest first
-- (contract 12). registry_meta.generations is tiny (one row per load).
SELECT generation
FROM registry_meta.generations
WHERE changes_dropped_at IS NULL
ORDER BY generation DESC
OFFSET %(keep)s::integer;
