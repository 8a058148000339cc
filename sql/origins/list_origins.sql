-- Returns one row: total (origins matching every given filter) and origins (the records of
-- one page of them, in contract order), from one snapshot since it is one statement.
-- A null parameter means that filter was not given. transport_bit is the filter's bit in
-- origin_rows.transports; search is already case-folded like name_key and registry_key,
-- and strpos takes it literally (no LIKE: percent, underscore and backslash match
-- themselves).
-- The count needs every matching row: one pass over the narrow origin_rows (through
-- origin_rows_network_idx or origin_rows_station_idx when those filters are given); the
-- page then reads its records from origin_docs by its primary key (pos).
WITH matching AS MATERIALIZED (
    SELECT r.pos
    FROM graph.origin_rows AS r
    WHERE (%(governed)s::boolean IS NULL OR r.governed = %(governed)s::boolean)
      AND (%(allocated)s::boolean IS NULL OR r.allocated = %(allocated)s::boolean)
      AND (%(publication_status)s::text IS NULL
           OR r.publication_status = %(publication_status)s::text)
      AND (%(transport_bit)s::smallint IS NULL
           OR r.transports & %(transport_bit)s::smallint <> 0)
      AND (%(has_presentations)s::boolean IS NULL
           OR (r.transports <> 0) = %(has_presentations)s::boolean)
      AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
      AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
      AND (%(search)s::text IS NULL
           OR strpos(r.name_key, %(search)s::text) > 0
           OR strpos(r.registry_key, %(search)s::text) > 0)
), page AS (
    SELECT pos FROM matching ORDER BY pos LIMIT %(limit)s OFFSET %(offset)s
)
SELECT (SELECT count(*) FROM matching) AS total,
       coalesce((SELECT jsonb_agg(d.doc ORDER BY d.pos)
                 FROM page JOIN graph.origin_docs AS d ON d.pos = page.pos),
                '[]'::jsonb) AS origins;
