-- Returns one row: ids, up to 100 origin ids (svc:origin:<uuid>) spread evenly through the
-- listing order, comma-separated: the `id=` row of `make bench`. One pass over the primary
-- key of origin_rows (the graph's size, once per bench run).
SELECT string_agg('svc:origin:' || id, ',' ORDER BY pos) AS ids
FROM (SELECT id, pos
      FROM graph.origin_rows
      WHERE pos % greatest(1, (SELECT count(*) FROM graph.origin_rows) / 100) = 0
      ORDER BY pos
      LIMIT 100) AS spread;
