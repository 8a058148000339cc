-- As list_net_changes.sql, for the net changes of one kind (%(kind)s): since the oldest
-- since, a range of net_changes_kind_lo_idx (migration 005); since n - 1, the range of
-- net_changes_until_idx filtered on the kind; otherwise, the planner's pick, such as
-- net_changes_kind_idx filtered on the since.
SELECT i.generation,
       i.committed_at,
       i.digest,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       o.since AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(CASE %(kind)s::text WHEN 'added' THEN c.added
                                    WHEN 'removed' THEN c.removed
                                    ELSE c.changed END, 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, c.added, c.removed, c.changed
FROM (SELECT generation, committed_at, digest FROM {graph}.graph_info LIMIT 1) AS i
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT max(s.generation) FROM registry_meta.generations AS s
                     WHERE s.generation <= i.generation AND s.changes_dropped_at IS NOT NULL),
                    (SELECT min(s.generation) FROM registry_meta.generations AS s)) AS since
    OFFSET 0
) AS o
JOIN registry_meta.generations AS g ON g.generation = i.generation
LEFT JOIN registry_meta.net_counts AS c
    ON c.generation = i.generation AND c.since = %(since)s::bigint
CROSS JOIN LATERAL (
    SELECT count(*) AS returned,
           '[' || coalesce(string_agg(
               registry_meta.net_change_json(
                   q.id, q.kind, q.blocks, b.before,
                   CASE WHEN q.last = q.until THEN b.after ELSE a.after END),
               ',' ORDER BY q.id), '') || ']' AS records
    FROM ((SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation AND x.lo = %(since)s::bigint
                 AND x.kind = %(kind)s::text
             AND %(since)s::bigint = o.since
           ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
          UNION ALL
          (SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation AND x.until = i.generation
                 AND x.kind = %(kind)s::text
             AND %(since)s::bigint = i.generation - 1 AND %(since)s::bigint <> o.since
           ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
          UNION ALL
          (SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation
             AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
                 AND x.kind = %(kind)s::text
             AND %(since)s::bigint <> o.since AND %(since)s::bigint <> i.generation - 1
           ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
          ORDER BY id
          OFFSET %(offset)s::bigint LIMIT %(limit)s::integer) AS q
    CROSS JOIN LATERAL (
        SELECT v.before, v.after
        FROM registry_meta.change_log AS v
        WHERE v.id = q.id AND v.generation = q.until
        OFFSET 0) AS b
    LEFT JOIN LATERAL (
        SELECT z.after
        FROM registry_meta.change_log AS z
        WHERE z.id = q.id AND z.generation = q.last AND q.last <> q.until
        OFFSET 0) AS a ON true
) AS p;
