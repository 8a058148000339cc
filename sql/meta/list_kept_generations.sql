-- Returns every generation still kept, newest first: its number, commit time, origins and
-- disk use (measured after its load). registry_meta.generations is tiny; no index needed.
SELECT generation, committed_at, origins, size_bytes
FROM registry_meta.generations
WHERE dropped_at IS NULL
ORDER BY generation DESC;
