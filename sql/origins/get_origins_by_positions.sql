-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, returned and
-- records (the records of the origins at these positions, one JSON array text in position
-- order). The caller kept
-- the positions of a search in one generation and uses the records only if this statement's
-- snapshot sees that same generation: both come from this one statement. Served by the
-- primary key of origin_docs.
SELECT i.generation,
       i.committed_at,
       i.digest,
       p.returned,
       p.records
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM {graph}.origin_docs AS d
              WHERE d.pos = ANY (%(positions)s::integer[])) AS p;
