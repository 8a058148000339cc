-- A clean schema to build the next graph in (left over from an interrupted load otherwise).
DROP SCHEMA IF EXISTS graph_next CASCADE;
DROP SCHEMA IF EXISTS graph_old CASCADE;
CREATE SCHEMA graph_next;
