-- Returns the next %(batch)s net changes, from origin id %(from)s on, from since %(since)s to
-- generation %(generation)s, whose oldest since is %(oldest)s (docs/api.md, "Changes since any
-- generation"; both read by the export's first statement, in its snapshot: a batch names no
-- graph schema, which a load may rename between two batches):
-- each id and its JSON object or CSV row ({column}: line or csv_line), by id. Each batch is
-- a statement of its own in the export's snapshot (registry.database.exports.KeysetRows), so
-- no buffer of net_changes stays pinned between batches: a load's VACUUM never waits for a
-- slow reader. Of one kind or block: export_net_changes_of_kind.sql, of the same shape. The
-- rows come from the branch of list_net_changes.sql the since takes, each from %(from)s:
-- net_changes_lo_idx for n's oldest since, net_changes_until_idx for n - 1, else the
-- planner's pick (net_changes_pkey); in id order, merged without a sort. Each row finds its
-- records by change_log_generation_id_idx: the version's at until, and the record at n at
-- last (read once when until = last), in subqueries kept apart (OFFSET 0) so that each is an
-- index lookup on both columns (registry/database/changes_since.py).
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
               AND x.id >= %(from)s::uuid
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 = (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.until = %(since)s::bigint + 1
               AND x.id >= %(from)s::uuid
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 <> (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
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
