-- Returns every net change from since %(since)s to the generation of the graph in schema
-- {graph} (docs/api.md, Changes since any generation) as its JSON object (line) or CSV row
-- (csv_line), by origin id; read through a server-side cursor in batches. The column is chosen by
-- the caller: {column}. The rows come from the branch of list_net_changes.sql that the since takes,
-- the others cut off by their one-time filters: a range of net_changes_lo_idx for n's oldest since,
-- of net_changes_until_idx for n - 1 (migration 005), else net_changes' primary key filtered on
-- the since; each in id order, merged without a sort. Each row then finds its records by
-- change_log's primary key (id, generation): the version's at until, and the record at n at
-- last, which is the same row when until = last (an origin changed once since), read once
-- (net_change_json and net_change_csv, migration 004). The two lookups are subqueries kept
-- apart (OFFSET 0), so each is a nested loop on both key columns: joined, the planner may
-- merge-join a whole walk of change_log's key instead, or look up by id alone.
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
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i)
               AND x.lo = %(since)s::bigint
               AND %(since)s::bigint = (SELECT registry_meta.oldest_since(i.generation)
                                        FROM {graph}.graph_info AS i)
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i)
               AND x.until = %(since)s::bigint + 1
               AND %(since)s::bigint + 1 = (SELECT i.generation FROM {graph}.graph_info AS i)
               AND %(since)s::bigint <> (SELECT registry_meta.oldest_since(i.generation)
                                         FROM {graph}.graph_info AS i)
             ORDER BY x.id)
            UNION ALL
            (SELECT x.id, x.until, x.last, x.kind, x.blocks
             FROM registry_meta.net_changes AS x
             WHERE x.generation = (SELECT i.generation FROM {graph}.graph_info AS i)
               AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
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
