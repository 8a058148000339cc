-- Returns one row: the generation and commit time of the graph in schema {graph}, and the
-- facet counts (contract 13) of a listing filtered on flags only (governance, allocation,
-- publication, transport, presentations: the flag combinations `combos`), read from the
-- counts the load built, as count_facets_of_all.sql returns them: combos from combo_counts;
-- networks summed per network over the admitted combinations (network_combo_counts through
-- network_combo_counts_combo_idx, and the origins with no network from facet_combo_counts);
-- stations from station_combo_counts and combo_counts.
SELECT i.generation,
       i.committed_at,
       (SELECT json_agg(json_build_array(c.combo, c.n))
        FROM {graph}.combo_counts AS c
        WHERE c.combo = ANY (%(combos)s::smallint[])) AS combos,
       (SELECT json_agg(json_build_array(t.network_id, w.name, t.n)
                        ORDER BY t.n DESC, t.network_id COLLATE "C" NULLS LAST)
        FROM (SELECT s.network_id, sum(s.n)::bigint AS n
              FROM (SELECT c.network_id, c.n FROM {graph}.network_combo_counts AS c
                    WHERE c.combo = ANY (%(combos)s::smallint[])
                    UNION ALL
                    SELECT NULL, c.n FROM {graph}.facet_combo_counts AS c
                    WHERE c.network_id IS NULL
                      AND c.combo = ANY (%(combos)s::smallint[])) AS s
              WHERE %(networks)s::boolean
              GROUP BY s.network_id
              ORDER BY n DESC, s.network_id COLLATE "C" NULLS LAST
              LIMIT %(size)s::integer) AS t
        LEFT JOIN {graph}.networks AS w ON w.id = t.network_id) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.n DESC, t.station NULLS LAST)
        FROM (SELECT s.station, sum(s.n)::bigint AS n
              FROM (SELECT c.station, c.n FROM {graph}.station_combo_counts AS c
                    WHERE c.combo = ANY (%(combos)s::smallint[])
                    UNION ALL
                    SELECT NULL::integer, c.n FROM {graph}.combo_counts AS c
                    WHERE c.combo = ANY (%(combos)s::smallint[]) AND c.combo & 2 = 0) AS s
              WHERE %(stations)s::boolean
              GROUP BY s.station
              ORDER BY n DESC, s.station NULLS LAST
              LIMIT %(size)s::integer) AS t) AS stations
FROM {graph}.graph_info AS i;
