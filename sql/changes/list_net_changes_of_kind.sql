-- As list_net_changes.sql, for the net changes of one kind (%(kind)s) and, when %(block)s is
-- not null, only those whose record differs in that block (kind is then changed). Each
-- branch is filtered on both (a block is null or not for the whole statement). Since the
-- oldest since, branch 1 reads net_changes_kind_lo_idx, not the places (they number every
-- kind together), so the page's OFFSET and LIMIT apply to all three branches.
SELECT i.generation,
       i.committed_at,
       i.digest,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       o.since AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(CASE coalesce(%(block)s::text, %(kind)s::text)
                WHEN 'added' THEN c.added WHEN 'removed' THEN c.removed
                WHEN 'changed' THEN c.changed WHEN 'origin' THEN c.origin
                WHEN 'governance' THEN c.governance WHEN 'bans' THEN c.bans
                ELSE c.presentations END, 0)::bigint AS total,
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
           WHERE x.generation = i.generation AND x.lo = %(since)s::bigint
             AND x.kind = %(kind)s::text
             AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
             AND %(since)s::bigint = o.since
           ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
          UNION ALL
          (SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation AND x.until = i.generation
             AND x.kind = %(kind)s::text
             AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
             AND %(since)s::bigint = i.generation - 1 AND %(since)s::bigint <> o.since
           ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
          UNION ALL
          (SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation
             AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
             AND x.kind = %(kind)s::text
             AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
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
