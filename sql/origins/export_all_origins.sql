-- Returns a first row (pos 0): the generation and commit time of the graph in schema
-- {graph}; then the record (doc: JSON text) of every origin, in listing order. Read through a
-- server-side cursor in batches; served by the primary key of origin_docs, in order.
-- All in one statement: one snapshot, one schema. The first row and the matches are
-- merged by pos (Merge Append), so the rows stream in order with no sort.
SELECT 0 AS pos, i.generation, i.committed_at, NULL::text AS doc
FROM {graph}.graph_info AS i
UNION ALL
(SELECT d.pos, NULL::bigint, NULL::timestamptz, d.doc
 FROM {graph}.origin_docs AS d)
ORDER BY pos;
