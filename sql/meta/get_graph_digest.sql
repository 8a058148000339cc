-- Returns the generation of the graph in schema {schema} and its digest (NULL for a graph
-- loaded before digests existed, migration 010). The one-row graph_info.
SELECT generation, digest FROM {schema}.graph_info;
