-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a listing of one network with no other filter, as
-- count_facets_of_all.sql returns them, read from what the load kept per network: combos
-- from the network's rows of network_combo_counts (network_combo_counts_idx); networks, the
-- network itself with every origin of it (none: no value); stations ranked at load
-- (network_station_tops, through network_station_tops_idx).
WITH combos AS MATERIALIZED (
    SELECT c.combo, c.n
    FROM {graph}.network_combo_counts AS c
    WHERE c.network_id = %(network_id)s::text
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT json_agg(json_build_array(c.combo, c.n)) FROM combos AS c) AS combos,
       (SELECT json_build_array(json_build_array(w.id, w.name, t.n))
        FROM (SELECT sum(c.n)::bigint AS n FROM combos AS c) AS t
        JOIN {graph}.networks AS w ON w.id = %(network_id)s::text
        WHERE %(networks)s::boolean AND t.n > 0) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.rank)
        FROM {graph}.network_station_tops AS t
        WHERE %(stations)s::boolean
          AND t.network_id = %(network_id)s::text
          AND t.rank <= %(size)s::integer) AS stations
FROM {graph}.graph_info AS i;
