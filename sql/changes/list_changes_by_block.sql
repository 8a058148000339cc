-- As list_changes.sql, for the changed origins whose record differs in block %(block)s: a
-- range of change_blocks' primary key (block, block_pos), each joined to its change by pos.
SELECT i.generation,
       i.committed_at,
       i.digest,
       coalesce((SELECT n FROM {graph}.change_counts
                 WHERE kind = 'changed' AND block = %(block)s), 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, g.added, g.removed, g.changed
FROM {graph}.graph_info AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(c.line, ',' ORDER BY b.block_pos), '') || ']'
                         AS records
              FROM {graph}.change_blocks AS b
              JOIN {graph}.change_lines AS c ON c.pos = b.pos
              WHERE b.block = %(block)s
                AND b.block_pos > %(offset)s::bigint
                AND b.block_pos <= %(offset)s::bigint + %(limit)s::integer) AS p;
