-- Returns a first row (pos 0): the generation and commit time of the graph in schema
-- {graph}; then the record (doc: JSON text) of every origin whose flag combination is one of combos
-- (governance, allocation, publication, transport and presentations filters), in listing
-- order. Served by origin_rows_pos_combo_idx (index-only, in position order), each match
-- joined to the primary key of origin_docs: the rows come in order, no sort, so the first
-- batch is ready as soon as its origins are found.
-- All in one statement: one snapshot, one schema. The first row and the matches are
-- merged by pos (Merge Append), so the rows stream in order with no sort.
SELECT 0 AS pos, i.generation, i.committed_at, NULL::text AS doc
FROM {graph}.graph_info AS i
UNION ALL
(SELECT r.pos, NULL::bigint, NULL::timestamptz, d.doc
 FROM {graph}.origin_rows AS r
 JOIN {graph}.origin_docs AS d ON d.pos = r.pos
 WHERE r.combo = ANY (%(combos)s::smallint[]))
ORDER BY pos;
