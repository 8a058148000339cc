-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph},
-- total, returned and records (the page's records, one JSON array text in position order), of
-- one network and one station (without one: list_origins_by_network.sql), optionally narrowed
-- by flag combinations (combos null: any). One index-only pass over origin_rows_network_idx
-- (network_id, pos) INCLUDE (combo, address_station) counts the matches and yields the page in
-- position order.
WITH matching AS MATERIALIZED (
    SELECT r.pos
    FROM {graph}.origin_rows AS r
    WHERE r.network_id = %(network_id)s::text
      AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
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
