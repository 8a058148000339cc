-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a listing of one station with no other filter, as
-- count_facets_of_all.sql returns them, read from what the load kept per station: combos
-- from the station's rows of station_combo_counts (station_combo_counts_idx); networks
-- ranked at load (station_network_tops, through station_network_tops_idx, each name by the
-- key of networks); stations, the station itself with every origin holding it (none: no
-- value).
WITH combos AS MATERIALIZED (
    SELECT c.combo, c.n
    FROM {graph}.station_combo_counts AS c
    WHERE c.station = %(station)s::integer
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT json_agg(json_build_array(c.combo, c.n)) FROM combos AS c) AS combos,
       (SELECT json_agg(json_build_array(t.network_id,
                                         (SELECT w.name FROM {graph}.networks AS w
                                          WHERE w.id = t.network_id),
                                         t.n)
                        ORDER BY t.rank)
        FROM {graph}.station_network_tops AS t
        WHERE %(networks)s::boolean
          AND t.station = %(station)s::integer
          AND t.rank <= %(size)s::integer) AS networks,
       (SELECT json_build_array(json_build_array(%(station)s::integer, t.n))
        FROM (SELECT sum(c.n)::bigint AS n FROM combos AS c) AS t
        WHERE %(stations)s::boolean AND t.n > 0) AS stations
FROM {graph}.graph_info AS i;
