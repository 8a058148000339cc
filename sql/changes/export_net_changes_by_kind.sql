-- As export_net_changes.sql, for the net changes of one kind (%(kind)s).
SELECT l.{column}
FROM (SELECT x.id,
             registry_meta.net_change_json(x.id, x.kind, x.blocks, b.before, a.after) AS line,
             registry_meta.net_change_csv(
                 x.id, x.kind, x.blocks,
                 CASE WHEN x.kind = 'removed' THEN b.before_name ELSE a.after_name END,
                 CASE WHEN x.kind = 'removed' THEN b.before_address ELSE a.after_address END)
                 AS csv_line
      FROM registry_meta.net_changes AS x
      JOIN registry_meta.change_log AS b ON b.id = x.id AND b.generation = x.until
      JOIN registry_meta.change_log AS a ON a.id = x.id AND a.generation = x.last
      WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i)
        AND x.kind = %(kind)s::text
        AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until) AS l
ORDER BY l.id;
