-- Returns the record (doc: JSON text) of every origin among ids (at most 100 uuids) that
-- passes the other filters (null: not given), search included, in listing order. Found
-- through origin_rows_id_key, joined to the primary key of origin_docs; the few rows are sorted.
SELECT d.doc
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_docs AS d ON d.pos = r.pos
WHERE r.id = ANY (%(ids)s::uuid[])
  AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
  AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
  AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
  AND (%(pattern)s::text IS NULL OR EXISTS (
      SELECT FROM {graph}.origin_search AS s
      WHERE s.pos = r.pos
        AND (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)))
ORDER BY r.pos;
