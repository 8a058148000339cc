-- Returns the generation the live graph (schema graph) holds, inside the load's transaction.
SELECT generation FROM graph.graph_info;
