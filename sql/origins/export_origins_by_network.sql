-- Returns the record (doc: JSON text) of every origin of one network, optionally narrowed by
-- station and flag combinations (null: any), in listing order. Served by
-- origin_rows_network_idx (network_id, pos) INCLUDE (combo, address_station), index-only and
-- already in position order, then the primary key of origin_docs.
SELECT d.doc
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_docs AS d ON d.pos = r.pos
WHERE r.network_id = %(network_id)s::text
  AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
  AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
ORDER BY r.pos;
