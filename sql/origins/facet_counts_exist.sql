-- Returns one row: the generation of the graph in schema {graph} (also named by `schema`),
-- and whether that graph has the facet counts (facet_combo_counts,
-- load/build_filter_counts.sql): a graph loaded before that file existed has not, and its
-- facets are counted from origin_rows instead. The one-row graph_info and a catalog lookup.
SELECT i.generation,
       to_regclass(format('%%I.facet_combo_counts', %(schema)s::text)) IS NOT NULL AS present
FROM {graph}.graph_info AS i;
