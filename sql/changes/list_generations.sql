-- Returns, for the graph in schema {graph} (the newest generation, or the one a request
-- pins), its stamp (generation, commit time, digest), then every generation up to it whose change set or
-- graph is still kept, newest first (docs/api.md, Changes since any generation), with its previous,
-- commit time, origins and change counts (NULL for a generation loaded before change sets were
-- recorded), its digest (NULL for one loaded before digests whose graph went before an upgrade),
-- whether its graph is kept (readable), the oldest since, and the last moment a drop changed this
-- list (NULL if none did): the answer's validators follow it. registry_meta.generations is
-- tiny (one row per load).
SELECT i.generation AS current, i.committed_at AS current_committed_at,
       i.digest AS current_digest,
       g.generation, g.previous, g.committed_at, g.origins, g.added, g.removed, g.changed,
       g.digest,
       g.dropped_at IS NULL AS readable,
       registry_meta.oldest_since(i.generation) AS oldest_since,
       (SELECT max(greatest(d.dropped_at, d.changes_dropped_at))
        FROM registry_meta.generations AS d
        WHERE d.generation <= i.generation) AS dropped_at
FROM {graph}.graph_info AS i
JOIN registry_meta.generations AS g
    ON (g.dropped_at IS NULL OR g.changes_dropped_at IS NULL) AND g.generation <= i.generation
ORDER BY g.generation DESC;
