-- Returns the CSV row (line: text ending in CRLF) of every origin allocated to one station,
-- optionally narrowed by flag combinations (null: any), in listing order:
-- export_origins_by_station.sql over origin_csv instead of origin_docs. Served by
-- origin_rows_station_idx (address_station, pos) INCLUDE (combo), index-only and already in
-- position order, then the primary key of origin_csv.
SELECT c.line
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_csv AS c ON c.pos = r.pos
WHERE r.address_station = %(station)s::integer
  AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
ORDER BY r.pos;
