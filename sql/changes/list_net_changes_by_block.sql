-- As list_net_changes.sql, for the changed origins whose record differs in block %(block)s:
-- a range of net_changes' (generation, kind, id) index for kind changed, filtered on since
-- and on the block.
SELECT i.generation,
       i.committed_at,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       registry_meta.oldest_since(i.generation) AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(CASE %(block)s::text WHEN 'origin' THEN c.origin
                                     WHEN 'governance' THEN c.governance
                                     WHEN 'bans' THEN c.bans
                                     ELSE c.presentations END, 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, c.added, c.removed, c.changed
FROM (SELECT generation, committed_at FROM {graph}.graph_info LIMIT 1) AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation
LEFT JOIN registry_meta.net_counts AS c
    ON c.generation = i.generation AND c.since = %(since)s::bigint
CROSS JOIN LATERAL (
    SELECT count(*) AS returned,
           '[' || coalesce(string_agg(
               registry_meta.net_change_json(q.id, q.kind, q.blocks, b.before, a.after),
               ',' ORDER BY q.id), '') || ']' AS records
    FROM (SELECT x.id, x.until, x.last, x.kind, x.blocks
          FROM registry_meta.net_changes AS x
          WHERE x.generation = i.generation AND x.kind = 'changed'
            AND %(block)s::text = ANY (x.blocks)
            AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
          ORDER BY x.id
          OFFSET %(offset)s::bigint LIMIT %(limit)s::integer) AS q
    JOIN registry_meta.change_log AS b ON b.id = q.id AND b.generation = q.until
    JOIN registry_meta.change_log AS a ON a.id = q.id AND a.generation = q.last
) AS p;
