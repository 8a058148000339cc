-- Returns one row: the generation of the graph in schema {graph} (also named by `schema`),
-- whether that graph has every facet count table (load/build_filter_counts.sql; its last,
-- station_network_tops, stands for them all): a graph loaded before that file made them has
-- not, and its facets are counted from origin_rows instead; and whether its origin_search
-- keeps what a search's facets group by (the network_numbers beside it,
-- load/build_origin_rows.sql): an older graph's search facets look each match up in
-- origin_rows. The one-row graph_info and two catalog lookups.
SELECT i.generation,
       to_regclass(format('%%I.station_network_tops', %(schema)s::text)) IS NOT NULL AS present,
       to_regclass(format('%%I.network_numbers', %(schema)s::text)) IS NOT NULL
           AS search_facets
FROM {graph}.graph_info AS i;
