-- Returns the CSV row (line: text ending in CRLF) of every origin whose folded name or
-- registry id contains the folded search term, with any other filters (null: not given), in
-- listing order: export_search_origins.sql over origin_csv instead of origin_docs. Reads
-- origin_search (its trigram indexes where the server has pg_trgm, else one pass over it);
-- other filters look each match up in origin_rows by position.
SELECT c.line
FROM {graph}.origin_search AS s
JOIN {graph}.origin_csv AS c ON c.pos = s.pos
WHERE (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)
  AND (
      (%(network_id)s::text IS NULL AND %(station)s::integer IS NULL
       AND %(combos)s::smallint[] IS NULL)
      OR EXISTS (
          SELECT FROM {graph}.origin_rows AS r
          WHERE r.pos = s.pos
            AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
            AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
            AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[])))
  )
ORDER BY s.pos;
