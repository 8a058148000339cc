-- Returns one row for since %(since)s (docs/api.md, "Changes between generations"): the stamp
-- of the graph in schema {graph} (n), whether since was produced, n's oldest since (o,
-- computed once), the newest generation, the total of the net changes since (net_counts), the
-- page (offset+1 .. offset+limit by origin id: one JSON array text), n's previous and the net
-- counts. Every net change; of one kind or block: list_net_changes_of_kind.sql. One of three
-- branches answers, the others cut off by one-time filters: since o, the places offset+1 ..
-- offset+limit of net_changes_pos_idx (the page itself: the last page costs what the first
-- does); since n - 1, net_changes_until_idx; any other since, the planner's pick. Each row's
-- records are looked up by change_log_generation_id_idx. Why each part is kept apart (OFFSET
-- 0, LIMIT 1), and why this text stays under 4096 bytes: registry/database/changes_since.py.
SELECT i.generation,
       i.committed_at,
       i.digest,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       o.since AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(c.added + c.removed + c.changed, 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, c.added, c.removed, c.changed
FROM (SELECT generation, committed_at, digest FROM {graph}.graph_info LIMIT 1) AS i
CROSS JOIN LATERAL (
    SELECT s.since FROM registry_meta.oldest_since_row(i.generation) AS s OFFSET 0
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
           WHERE x.generation = i.generation AND x.pos > %(offset)s::bigint
             AND x.pos <= %(offset)s::bigint + %(limit)s::integer
             AND %(since)s::bigint = o.since)
          UNION ALL
          (SELECT r.id, r.until, r.last, r.kind, r.blocks
           FROM ((SELECT x.id, x.until, x.last, x.kind, x.blocks
                  FROM registry_meta.net_changes AS x
                  WHERE x.generation = i.generation AND x.until = i.generation
                    AND %(since)s::bigint = i.generation - 1 AND %(since)s::bigint <> o.since
                  ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
                 UNION ALL
                 (SELECT x.id, x.until, x.last, x.kind, x.blocks
                  FROM registry_meta.net_changes AS x
                  WHERE x.generation = i.generation
                    AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
                    AND %(since)s::bigint <> o.since AND %(since)s::bigint <> i.generation - 1
                  ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
                 ORDER BY id
                 OFFSET %(offset)s::bigint LIMIT %(limit)s::integer) AS r)) AS q
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
