-- As list_changes.sql, for the changes of one kind (%(kind)s): a range of (kind, kind_pos).
SELECT i.generation,
       i.committed_at,
       i.digest,
       coalesce((SELECT n FROM {graph}.change_counts
                 WHERE kind = %(kind)s AND block = ''), 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, g.added, g.removed, g.changed
FROM {graph}.graph_info AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(c.line, ',' ORDER BY c.kind_pos), '') || ']'
                         AS records
              FROM {graph}.change_lines AS c
              WHERE c.kind = %(kind)s
                AND c.kind_pos > %(offset)s::bigint
                AND c.kind_pos <= %(offset)s::bigint + %(limit)s::integer) AS p;
