-- Returns the newest generation, its commit time and digest (one row), for a conditional
-- request:
-- the one-row table graph.graph_info, no index needed.
SELECT generation, committed_at, digest FROM graph.graph_info;
