-- Returns the newest generation and its commit time (one row), for a conditional request:
-- the one-row table graph.graph_info, no index needed.
SELECT generation, committed_at FROM graph.graph_info;
