-- As export_net_changes.sql, for the changed origins whose record differs in block %(block)s:
-- for the oldest since a range of net_changes_kind_lo_idx, filtered on the block.
SELECT l.{column}
FROM (SELECT x.id,
             registry_meta.net_change_json(
                 x.id, x.kind, x.blocks, b.before,
                 CASE WHEN x.last = x.until THEN b.after ELSE a.after END) AS line,
             registry_meta.net_change_csv(
                 x.id, x.kind, x.blocks,
                 CASE WHEN x.kind = 'removed' THEN b.before_name
                      WHEN x.last = x.until THEN b.after_name ELSE a.after_name END,
                 CASE WHEN x.kind = 'removed' THEN b.before_address
                      WHEN x.last = x.until THEN b.after_address ELSE a.after_address END)
                 AS csv_line
      FROM ((SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i) AND x.kind = 'changed'
               AND x.lo = %(since)s::bigint
               AND %(block)s::text = ANY (x.blocks)
               AND %(since)s::bigint = (SELECT registry_meta.oldest_since(i.generation)
                                        FROM {graph}.graph_info AS i)
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i) AND x.kind = 'changed'
               AND x.until = %(since)s::bigint + 1
               AND %(block)s::text = ANY (x.blocks)
               AND %(since)s::bigint + 1 = (SELECT i.generation FROM {graph}.graph_info AS i)
               AND %(since)s::bigint <> (SELECT registry_meta.oldest_since(i.generation)
                                         FROM {graph}.graph_info AS i)
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i) AND x.kind = 'changed'
               AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
               AND %(block)s::text = ANY (x.blocks)
               AND %(since)s::bigint + 1 <> (SELECT i.generation FROM {graph}.graph_info AS i)
               AND %(since)s::bigint <> (SELECT registry_meta.oldest_since(i.generation)
                                         FROM {graph}.graph_info AS i)
             ORDER BY x.id)) AS x
      CROSS JOIN LATERAL (
          SELECT v.before, v.before_name, v.before_address,
                 v.after, v.after_name, v.after_address
          FROM registry_meta.change_log AS v
          WHERE v.id = x.id AND v.generation = x.until
          OFFSET 0) AS b
      LEFT JOIN LATERAL (
          SELECT z.after, z.after_name, z.after_address
          FROM registry_meta.change_log AS z
          WHERE z.id = x.id AND z.generation = x.last AND x.last <> x.until
          OFFSET 0) AS a ON true) AS l
ORDER BY l.id;
