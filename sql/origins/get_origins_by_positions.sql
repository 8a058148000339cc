-- Returns one row: graph (the live graph's identity: its load time) and origins (the records,
-- as JSON text, of the origins at these positions, in position order). The caller kept the
-- positions of a search for one graph and uses the records only if graph is still that one:
-- both come from this statement's one snapshot. Served by the primary key of origin_docs.
SELECT (SELECT loaded_at FROM graph.graph_info) AS graph,
       ARRAY(SELECT d.doc
             FROM graph.origin_docs AS d
             WHERE d.pos = ANY (%(positions)s::integer[])
             ORDER BY d.pos) AS origins;
