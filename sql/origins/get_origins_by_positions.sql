-- Returns one row: the generation and commit time of the graph in schema {graph}, and the
-- records (JSON text) of the origins at these positions, in position order. The caller kept
-- the positions of a search in one generation and uses the records only if this statement's
-- snapshot sees that same generation: both come from this one statement. Served by the
-- primary key of origin_docs.
SELECT i.generation,
       i.committed_at,
       ARRAY(SELECT d.doc
             FROM {graph}.origin_docs AS d
             WHERE d.pos = ANY (%(positions)s::integer[])
             ORDER BY d.pos) AS origins
FROM {graph}.graph_info AS i;
