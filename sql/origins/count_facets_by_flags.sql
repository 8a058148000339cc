-- Returns one row: the generation and commit time of the graph in schema {graph}, and the
-- facet counts (contract 13) of a listing filtered on flags only (governance, allocation,
-- publication, transport, presentations: the flag combinations `combos`), read from the
-- counts the load built, as count_facets_of_all.sql returns them: combos from combo_counts;
-- networks ranked at load under the key of these filter values (network_facet_tops);
-- stations from station_combo_counts and combo_counts. known says whether this generation
-- ranked that key (facet_keys); when it did not, the caller counts the rows instead.
SELECT i.generation,
       i.committed_at,
       (SELECT json_agg(json_build_array(c.combo, c.n))
        FROM {graph}.combo_counts AS c
        WHERE c.combo = ANY (%(combos)s::smallint[])) AS combos,
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
                    WHERE c.combo = ANY (%(combos)s::smallint[])
                    UNION ALL
                    SELECT NULL::integer, c.n FROM {graph}.combo_counts AS c
                    WHERE c.combo = ANY (%(combos)s::smallint[]) AND c.combo & 2 = 0) AS s
              WHERE %(stations)s::boolean
              GROUP BY s.station
              ORDER BY n DESC, s.station NULLS LAST
              LIMIT %(size)s::integer) AS t) AS stations,
       EXISTS (SELECT FROM {graph}.facet_keys AS k WHERE k.key = %(key)s::text) AS known
FROM {graph}.graph_info AS i;
