-- Drops the graph a load replaced (after its commit; waits only briefly for readers).
DROP SCHEMA IF EXISTS graph_old CASCADE;
