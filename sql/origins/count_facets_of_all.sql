-- Returns one row: the generation and commit time of the graph in schema {graph}, and the
-- facet counts (contract 13) of a listing with no filter, read from the counts the load built:
-- combos, [[combo, n], ...] for the flag facets (combo_counts); networks, the network_id
-- facet's first `size` values [[network_id, name, n], ...] in facet order (the head of
-- network_facet_counts_rank_idx); stations, the station_id facet's first `size` values
-- [[station, n], ...] (station_combo_counts, a few rows per station, and the unallocated
-- from combo_counts). networks and stations are null unless asked for.
SELECT i.generation,
       i.committed_at,
       (SELECT json_agg(json_build_array(c.combo, c.n)) FROM {graph}.combo_counts AS c)
           AS combos,
       (SELECT json_agg(json_build_array(t.network_id, w.name, t.n)
                        ORDER BY t.n DESC, t.network_id COLLATE "C" NULLS LAST)
        FROM (SELECT f.network_id, f.n
              FROM {graph}.network_facet_counts AS f
              WHERE %(networks)s::boolean
              ORDER BY f.n DESC, f.network_id COLLATE "C" NULLS LAST
              LIMIT %(size)s::integer) AS t
        LEFT JOIN {graph}.networks AS w ON w.id = t.network_id) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.n DESC, t.station NULLS LAST)
        FROM (SELECT s.station, sum(s.n)::bigint AS n
              FROM (SELECT c.station, c.n FROM {graph}.station_combo_counts AS c
                    UNION ALL
                    SELECT NULL::integer, c.n FROM {graph}.combo_counts AS c
                    WHERE c.combo & 2 = 0) AS s
              WHERE %(stations)s::boolean
              GROUP BY s.station
              ORDER BY n DESC, s.station NULLS LAST
              LIMIT %(size)s::integer) AS t) AS stations
FROM {graph}.graph_info AS i;
