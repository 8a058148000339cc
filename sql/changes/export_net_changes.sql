-- Returns every net change from since %(since)s to the generation of the graph in schema
-- {graph} (docs/api.md, "Changes between generations") as its JSON object (line) or CSV row
-- (csv_line), by origin id; read through a server-side cursor in batches. The column is chosen
-- by the caller: {column}. Every net change; the changes of one kind, or of one block, are
-- export_net_changes_of_kind.sql, of the same shape. n is the generation and its oldest since
-- (registry_meta.oldest_since_row, inlined), computed once. The rows come from the branch of
-- list_net_changes.sql that the since takes, the others cut off by their one-time filters: a
-- range of net_changes_lo_idx for n's oldest since, of net_changes_until_idx for n - 1
-- (migration 005), else the planner's pick, such as net_changes_pkey, (generation, id, until),
-- filtered on the since; each in id order, merged without a sort. Each row then finds its
-- records by change_log_generation_id_idx, (generation, id) (migration 009): the version's at
-- until, and the record at n at last, which is the same row when until = last (an origin
-- changed once since), read once (net_change_json and net_change_csv, inlined). The two
-- lookups are subqueries kept apart (OFFSET 0), so each is a nested loop on both index
-- columns: joined, the planner may merge-join a whole walk of change_log instead, or look up
-- by id alone.
WITH n AS MATERIALIZED (
    SELECT i.generation, o.since
    FROM {graph}.graph_info AS i
    CROSS JOIN LATERAL registry_meta.oldest_since_row(i.generation) AS o
)
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
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint = (SELECT n.since FROM n)
               AND x.lo = %(since)s::bigint
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 = (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.until = %(since)s::bigint + 1
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT n.generation FROM n)
               AND %(since)s::bigint + 1 <> (SELECT n.generation FROM n)
               AND %(since)s::bigint <> (SELECT n.since FROM n)
               AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
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
