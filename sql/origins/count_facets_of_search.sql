-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a search, with any other filters (null: not given),
-- as count_facets_of_all.sql returns them. No count table knows a search's matches, so they
-- are counted: found as search_origins.sql finds them (origin_search, its trigram indexes
-- where the server has pg_trgm, else one pass over it) and grouped by the station, network
-- number and flag combination the load keeps beside each search key, so a frequent term
-- costs the pages its matches are on and no lookup per match. Networks are ranked by number
-- (numbers follow network ids in plain string order), and only the ranked ones are looked
-- up in network_numbers and networks by their keys.
WITH groups AS MATERIALIZED (
    SELECT s.network, s.station, s.combo, count(*)::bigint AS n
    FROM {graph}.origin_search AS s
    WHERE (s.name_key LIKE %(pattern)s::text OR s.registry_key LIKE %(pattern)s::text)
      AND (%(network_id)s::text IS NULL
           OR s.network = (SELECT k.number FROM {graph}.network_numbers AS k
                           WHERE k.id = %(network_id)s::text))
      AND (%(station)s::integer IS NULL OR s.station = %(station)s::integer)
      AND (%(combos)s::smallint[] IS NULL OR s.combo = ANY (%(combos)s::smallint[]))
    GROUP BY 1, 2, 3
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT json_agg(json_build_array(g.combo, g.n))
        FROM (SELECT combo, sum(n)::bigint AS n FROM groups GROUP BY combo) AS g) AS combos,
       (SELECT json_agg(json_build_array(k.id, w.name, t.n)
                        ORDER BY t.n DESC, t.network NULLS LAST)
        FROM (SELECT g.network, sum(g.n)::bigint AS n
              FROM groups AS g
              WHERE %(networks)s::boolean
              GROUP BY g.network
              ORDER BY n DESC, g.network NULLS LAST
              LIMIT %(size)s::integer) AS t
        LEFT JOIN {graph}.network_numbers AS k ON k.number = t.network
        LEFT JOIN {graph}.networks AS w ON w.id = k.id) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.n DESC, t.station NULLS LAST)
        FROM (SELECT g.station, sum(g.n)::bigint AS n
              FROM groups AS g
              WHERE %(stations)s::boolean
              GROUP BY g.station
              ORDER BY n DESC, g.station NULLS LAST
              LIMIT %(size)s::integer) AS t) AS stations
FROM {graph}.graph_info AS i;
