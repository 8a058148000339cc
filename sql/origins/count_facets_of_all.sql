-- Returns one row: the generation and commit time of the graph in schema {graph}, and the
-- facet counts (contract 13) of a listing with no filter, read from the counts the load built:
-- combos, [[combo, n], ...] for the flag facets (combo_counts); networks, the network_id
-- facet's first `size` values [[network_id, name, n], ...] in facet order (network_facet_tops
-- under the key of no flag filter, through network_facet_tops_idx, each name by the key of
-- networks); stations, the station_id facet's first `size` values
-- [[station, n], ...] (station_combo_counts, a few rows per station, and the unallocated
-- from combo_counts). networks and stations are null unless asked for.
SELECT i.generation,
       i.committed_at,
       (SELECT json_agg(json_build_array(c.combo, c.n)) FROM {graph}.combo_counts AS c)
           AS combos,
       (SELECT json_agg(json_build_array(t.network_id,
                                         (SELECT w.name FROM {graph}.networks AS w
                                          WHERE w.id = t.network_id),
                                         t.n)
                        ORDER BY t.rank)
        FROM {graph}.network_facet_tops AS t
        WHERE %(networks)s::boolean
          AND t.set = (SELECT k.set FROM {graph}.facet_keys AS k WHERE k.key = %(key)s::text)
          AND t.rank <= %(size)s::integer) AS networks,
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
