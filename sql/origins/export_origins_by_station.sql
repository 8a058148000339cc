-- Returns the record (doc: JSON text) of every origin allocated to one station, optionally
-- narrowed by flag combinations (null: any), in listing order. Served by
-- origin_rows_station_idx (address_station, pos) INCLUDE (combo), index-only and already in
-- position order, then the primary key of origin_docs.
SELECT d.doc
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_docs AS d ON d.pos = r.pos
WHERE r.address_station = %(station)s::integer
  AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
ORDER BY r.pos;
