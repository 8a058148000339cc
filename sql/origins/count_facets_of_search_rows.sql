-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a search, with any other filters (null: not given),
-- as count_facets_of_all.sql returns them, for a graph whose origin_search holds only the
-- search keys (loaded before count_facets_of_search.sql's columns were there). Its matches
-- are found as search_origins.sql finds them (origin_search, its trigram indexes where the
-- server has pg_trgm), each looked up in origin_rows by position and grouped: the same
-- answer, at one index lookup per match.
WITH groups AS MATERIALIZED (
    SELECT r.network_id, r.station, r.combo, count(*)::bigint AS n
    FROM {graph}.origin_search AS s,
         -- OFFSET 0 keeps this a lookup by position per match, not a join over origin_rows.
         LATERAL (SELECT o.network_id,
                         CASE WHEN o.allocated THEN o.address_station END AS station,
                         o.combo
                  FROM {graph}.origin_rows AS o
                  WHERE o.pos = s.pos
                    AND (%(network_id)s::text IS NULL OR o.network_id = %(network_id)s::text)
                    AND (%(station)s::integer IS NULL
                         OR o.address_station = %(station)s::integer)
                    AND (%(combos)s::smallint[] IS NULL
                         OR o.combo = ANY (%(combos)s::smallint[]))
                  OFFSET 0) AS r
    WHERE s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text
    GROUP BY 1, 2, 3
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT json_agg(json_build_array(g.combo, g.n))
        FROM (SELECT combo, sum(n)::bigint AS n FROM groups GROUP BY combo) AS g) AS combos,
       (SELECT json_agg(json_build_array(t.network_id,
                                         (SELECT w.name FROM {graph}.networks AS w
                                          WHERE w.id = t.network_id),
                                         t.n)
                        ORDER BY t.n DESC, t.network_id COLLATE "C" NULLS LAST)
        FROM (SELECT g.network_id, sum(g.n)::bigint AS n
              FROM groups AS g
              WHERE %(networks)s::boolean
              GROUP BY g.network_id
              ORDER BY n DESC, g.network_id COLLATE "C" NULLS LAST
              LIMIT %(size)s::integer) AS t) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.n DESC, t.station NULLS LAST)
        FROM (SELECT g.station, sum(g.n)::bigint AS n
              FROM groups AS g
              WHERE %(stations)s::boolean
              GROUP BY g.station
              ORDER BY n DESC, g.station NULLS LAST
              LIMIT %(size)s::integer) AS t) AS stations
FROM {graph}.graph_info AS i;
