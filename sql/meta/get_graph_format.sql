-- Returns the fingerprint of the SQL that built the live graph, and its origin count.
SELECT (SELECT format FROM graph.graph_info) AS format,
       (SELECT count(*) FROM graph.origin_rows) AS origins;
