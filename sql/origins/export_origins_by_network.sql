-- Returns a first row (pos 0): the generation and commit time of the graph in schema
-- {graph}; then the record (doc: JSON text) of every origin of one network, optionally narrowed by
-- station and flag combinations (null: any), in listing order. Served by
-- origin_rows_network_idx (network_id, pos) INCLUDE (combo, address_station), index-only and
-- already in position order, then the primary key of origin_docs.
-- All in one statement: one snapshot, one schema. The first row and the matches are
-- merged by pos (Merge Append), so the rows stream in order with no sort.
SELECT 0 AS pos, i.generation, i.committed_at, NULL::text AS doc
FROM {graph}.graph_info AS i
UNION ALL
(SELECT r.pos, NULL::bigint, NULL::timestamptz, d.doc
 FROM {graph}.origin_rows AS r
 JOIN {graph}.origin_docs AS d ON d.pos = r.pos
 WHERE r.network_id = %(network_id)s::text
   AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
   AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[])))
ORDER BY pos;
