-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph},
-- and the facet counts (docs/api.md, Facets and ids) of a listing of one network narrowed by a
-- station or flag combinations or both (each null: any; the network alone is
-- count_facets_of_network.sql), as count_facets_of_all.sql returns them, summed from the network's
-- rows of facet_combo_counts (a row per station and combination, read through
-- facet_combo_counts_network_idx).
WITH groups AS MATERIALIZED (
    SELECT c.network_id, c.station, c.combo, c.n
    FROM {graph}.facet_combo_counts AS c
    WHERE c.network_id = %(network_id)s::text
      AND (%(station)s::integer IS NULL OR c.station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR c.combo = ANY (%(combos)s::smallint[]))
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
