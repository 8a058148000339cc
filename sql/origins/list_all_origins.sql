-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, total (every origin),
-- returned and records (positions offset+1 .. offset+limit, one JSON array text). No filter: the total is the sum of the per-
-- combination counts built at load time, and a page is a range of the primary key of
-- origin_docs, so the first and the last page cost the same. The casts matter: psycopg
-- sends a small Python int as smallint, and offset + limit would overflow there.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT coalesce(sum(n), 0) FROM {graph}.combo_counts)::bigint AS total,
       p.returned,
       p.records
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM {graph}.origin_docs AS d
              WHERE d.pos > %(offset)s::bigint
                AND d.pos <= %(offset)s::bigint + %(limit)s::integer) AS p;
