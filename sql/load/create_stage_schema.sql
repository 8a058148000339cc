-- A schema of its own for the tables a load fills on its second connection (a random name,
-- graph_stage_<hex>); they are moved into graph_next by take_staged_table.sql.
CREATE SCHEMA {schema};
