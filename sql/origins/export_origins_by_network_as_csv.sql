-- Returns the CSV row (line: text ending in CRLF) of every origin of one network, optionally
-- narrowed by station and flag combinations (null: any), in listing order:
-- export_origins_by_network.sql over origin_csv instead of origin_docs. Served by
-- origin_rows_network_idx (network_id, pos) INCLUDE (combo, address_station), index-only and
-- already in position order, then the primary key of origin_csv.
SELECT c.line
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_csv AS c ON c.pos = r.pos
WHERE r.network_id = %(network_id)s::text
  AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
  AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
ORDER BY r.pos;
