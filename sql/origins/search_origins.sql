-- Returns one row: graph (the live graph's identity: its load time), positions (every
-- matching origin's pos, in order: the caller keeps them for that graph, and the total is
-- their count) and origins (one page of records as JSON text), for origins whose folded name
-- or registry id contains the folded search term, with any other filters (null: not given).
-- pattern is the term with LIKE's wildcards and escape escaped, between two percent signs,
-- so it matches the term literally. It reads the narrow origin_search through the trigram
-- indexes the load builds there (a pass over origin_search on a server without pg_trgm).
-- Other filters look each match up in origin_rows by position.
WITH matching AS MATERIALIZED (
    SELECT s.pos
    FROM graph.origin_search AS s
    WHERE (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)
      AND (
          (%(network_id)s::text IS NULL AND %(station)s::integer IS NULL
           AND %(combos)s::smallint[] IS NULL)
          OR EXISTS (
              SELECT FROM graph.origin_rows AS r
              WHERE r.pos = s.pos
                AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
                AND (%(station)s::integer IS NULL
                     OR r.address_station = %(station)s::integer)
                AND (%(combos)s::smallint[] IS NULL
                     OR r.combo = ANY (%(combos)s::smallint[])))
      )
), page AS (
    SELECT pos FROM matching ORDER BY pos LIMIT %(limit)s::integer OFFSET %(offset)s::bigint
)
SELECT (SELECT loaded_at FROM graph.graph_info) AS graph,
       ARRAY(SELECT pos FROM matching ORDER BY pos) AS positions,
       ARRAY(SELECT d.doc
             FROM page JOIN graph.origin_docs AS d ON d.pos = page.pos
             ORDER BY d.pos) AS origins;
