-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of the origins among `ids` (uuids; null: every origin)
-- that pass the other filters (null: not given), as count_facets_of_all.sql returns them, counted
-- from origin_rows. With ids, at most 100 rows, found through origin_rows_id_key. Without
-- them this counts every matching origin: it answers for a graph loaded before
-- load/build_filter_counts.sql existed, which has no facet counts to read.
WITH groups AS MATERIALIZED (
    SELECT r.network_id,
           CASE WHEN r.allocated THEN r.address_station END AS station,
           r.combo,
           count(*)::bigint AS n
    FROM {graph}.origin_rows AS r
    WHERE (%(ids)s::uuid[] IS NULL OR r.id = ANY (%(ids)s::uuid[]))
      AND (%(network_id)s::text IS NULL OR r.network_id = %(network_id)s::text)
      AND (%(station)s::integer IS NULL OR r.address_station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR r.combo = ANY (%(combos)s::smallint[]))
      AND (%(pattern)s::text IS NULL OR EXISTS (
          SELECT FROM {graph}.origin_search AS s
          WHERE s.pos = r.pos
            AND (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)))
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
