-- Returns, for the graph in schema {graph} (the newest generation, or the one a request
-- pins), its generation and commit time, then every kept generation up to it, newest first,
-- with its previous, commit time, origins and change counts (NULL for a generation loaded
-- before change sets were recorded) (contract 10). registry_meta.generations is tiny.
SELECT i.generation AS current, i.committed_at AS current_committed_at,
       g.generation, g.previous, g.committed_at, g.origins, g.added, g.removed, g.changed
FROM {graph}.graph_info AS i
JOIN registry_meta.generations AS g ON g.dropped_at IS NULL AND g.generation <= i.generation
ORDER BY g.generation DESC;
