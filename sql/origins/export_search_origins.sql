-- Returns the record (doc: JSON text) of every origin whose folded name or registry id
-- contains the folded search term, with any other filters (null: not given), in listing
-- order. pattern is the term with LIKE's wildcards escaped, between two percent signs. Reads
-- origin_search (its trigram indexes where the server has pg_trgm, else one pass over it);
-- other filters look each match up in origin_rows by position.
SELECT d.doc
FROM {graph}.origin_search AS s
JOIN {graph}.origin_docs AS d ON d.pos = s.pos
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
