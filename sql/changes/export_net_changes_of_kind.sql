-- As export_net_changes.sql, of the same shape, for the net changes of one kind (%(kind)s)
-- and, when %(block)s is not null, of those of kind changed (the caller passes kind changed)
-- whose record differs in that block. What differs is named where it is: each branch is
-- filtered on the kind and the block, and since the oldest since the range is of
-- net_changes_kind_lo_idx, (generation, kind, lo, id) (migration 005), in id order.
WITH n AS MATERIALIZED (
    SELECT %(generation)s::bigint AS generation, %(oldest)s::bigint AS since
)
SELECT l.id, l.{column} AS line
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
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint = (SELECT n.since FROM n)
               AND x.lo = %(since)s::bigint
               -- of the kind (or block)
               AND x.kind = %(kind)s::text
               AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
               AND x.id >= %(from)s::uuid
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 = (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.until = %(since)s::bigint + 1
               -- of the kind (or block)
               AND x.kind = %(kind)s::text
               AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
               AND x.id >= %(from)s::uuid
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 <> (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
               -- of the kind (or block)
               AND x.kind = %(kind)s::text
               AND (%(block)s::text IS NULL OR %(block)s::text = ANY (x.blocks))
               AND x.id >= %(from)s::uuid
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
ORDER BY l.id
LIMIT %(batch)s::integer;
