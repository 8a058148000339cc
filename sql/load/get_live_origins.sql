-- Returns the generation the live graph (schema graph) holds and how many origins it has,
-- inside the load's transaction, for the change set and the removal guard.
SELECT i.generation, (SELECT count(*) FROM graph.origin_rows) AS origins
FROM graph.graph_info AS i;
