-- Returns the generations past the newest %(keep)s that are still there, oldest first.
-- registry_meta.generations is tiny (one row per load); its primary key orders it.
SELECT generation
FROM registry_meta.generations
WHERE dropped_at IS NULL
ORDER BY generation DESC
OFFSET %(keep)s::integer;
