-- Returns one row: total and origins (one page of records as JSON text) whose folded name
-- or registry id contains the folded search term, with any other filters (null: not given).
-- pattern is the term with LIKE's wildcards and escape escaped, between two percent signs,
-- so it matches the term literally; where the server has pg_trgm the load builds trigram
-- indexes on name_key and registry_key that serve it, elsewhere this is one pass over
-- origin_rows.
WITH matching AS MATERIALIZED (
    SELECT r.pos
    FROM graph.origin_rows AS r
    WHERE (r.name_key LIKE %(pattern)s::text OR r.registry_key LIKE %(pattern)s::text)
      AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
      AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
), page AS (
    SELECT pos FROM matching ORDER BY pos LIMIT %(limit)s::integer OFFSET %(offset)s::bigint
)
SELECT (SELECT count(*) FROM matching) AS total,
       ARRAY(SELECT d.doc
             FROM page JOIN graph.origin_docs AS d ON d.pos = page.pos
             ORDER BY d.pos) AS origins;
