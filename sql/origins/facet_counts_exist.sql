-- Returns one row: the generation of the graph in schema {graph} (also named by `schema`),
-- and whether that graph has every facet count table (load/build_filter_counts.sql; its
-- last, station_network_tops, stands for them all): a graph loaded before that file made
-- them has not, and its facets are counted from origin_rows instead. The one-row
-- graph_info and a catalog lookup.
SELECT i.generation,
       to_regclass(format('%%I.station_network_tops', %(schema)s::text)) IS NOT NULL AS present
FROM {graph}.graph_info AS i;
