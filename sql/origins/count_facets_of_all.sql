-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and the
-- facet counts (docs/api.md, Facets and ids) of a listing with no filter, read from the counts the
-- load built: combos, [[combo, n], ...] for the flag facets (combo_counts); networks, the
-- network_id facet's first `size` values [[network_id, name, n], ...] in facet order
-- (network_facet_tops under the key of no flag filter, through network_facet_tops_idx, each name by
-- the key of networks); stations, the station_id facet's first `size` values
-- [[station, n], ...] in facet order (station_facet_tops under the same key, through
-- station_facet_tops_idx). networks and stations are null unless asked for.
-- The set of ranked values these filter values share, looked up once (facet_keys_pkey).
WITH keyed AS (
    SELECT k.set FROM {graph}.facet_keys AS k WHERE k.key = %(key)s::text
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT json_agg(json_build_array(c.combo, c.n)) FROM {graph}.combo_counts AS c)
           AS combos,
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
          AND t.rank <= %(size)s::integer) AS stations
FROM {graph}.graph_info AS i;
