-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, total,
-- returned and records (the page's records, one JSON array text in position order), whose folded name
-- or registry id contains the folded search term, with any other filters (null: not given),
-- and positions (the first `remembered` matches', in order), which the service keeps for the
-- search's later pages in this generation (registry/database/search_cache.py).
-- pattern is the term with LIKE's wildcards and escape escaped, between two percent signs,
-- so it matches the term literally. It reads the narrow origin_search; where the server has
-- pg_trgm the load builds trigram indexes there that serve the LIKE, elsewhere this is one
-- pass over origin_search. Other filters look each match up in origin_rows by position.
WITH matching AS MATERIALIZED (
    SELECT s.pos
    FROM {graph}.origin_search AS s
    WHERE (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)
      AND (
          (%(network_id)s::text IS NULL AND %(station)s::integer IS NULL
           AND %(combos)s::smallint[] IS NULL)
          OR EXISTS (
              SELECT FROM {graph}.origin_rows AS r
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
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT count(*) FROM matching) AS total,
       p.returned,
       p.records,
       ARRAY(SELECT pos FROM matching ORDER BY pos LIMIT %(remembered)s::integer) AS positions
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM page JOIN {graph}.origin_docs AS d ON d.pos = page.pos) AS p;
