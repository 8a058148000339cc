-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a listing filtered on flags only (governance,
-- allocation, publication, transport, presentations: the flag combinations `combos`), read from the
-- counts the load built, as count_facets_of_all.sql returns them: combos from combo_counts;
-- networks and stations ranked at load under the key of these filter values
-- (network_facet_tops, station_facet_tops). known says whether this generation ranked that
-- key (facet_keys); when it did not, the caller counts the rows instead.
-- The set of ranked values these filter values share, looked up once (facet_keys_pkey).
WITH keyed AS (
    SELECT k.set FROM {graph}.facet_keys AS k WHERE k.key = %(key)s::text
)
SELECT i.generation,
       i.committed_at,
       i.digest,
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
          AND t.set = (SELECT k.set FROM keyed AS k)
          AND t.rank <= %(size)s::integer) AS networks,
       (SELECT json_agg(json_build_array(t.station, t.n) ORDER BY t.rank)
        FROM {graph}.station_facet_tops AS t
        WHERE %(stations)s::boolean
          AND t.set = (SELECT k.set FROM keyed AS k)
          AND t.rank <= %(size)s::integer) AS stations,
       EXISTS (SELECT FROM keyed) AS known
FROM {graph}.graph_info AS i;
