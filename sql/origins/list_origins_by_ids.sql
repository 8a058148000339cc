-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, total,
-- returned and records (the page's records, one JSON array text in position order), of the
-- origins among ids (at most 100 uuids) that pass the other filters (null: not given),
-- search included. Found through origin_rows_id_key (one probe per id), so the other
-- filters only ever test those few rows.
WITH matching AS MATERIALIZED (
    SELECT r.pos
    FROM {graph}.origin_rows AS r
    WHERE r.id = ANY (%(ids)s::uuid[])
      AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
      AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
      AND (%(pattern)s::text IS NULL OR EXISTS (
          SELECT FROM {graph}.origin_search AS s
          WHERE s.pos = r.pos
            AND (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)))
), page AS (
    SELECT pos FROM matching ORDER BY pos LIMIT %(limit)s::integer OFFSET %(offset)s::bigint
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT count(*) FROM matching) AS total,
       p.returned,
       p.records
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM page JOIN {graph}.origin_docs AS d ON d.pos = page.pos) AS p;
