-- In the load's transaction: a table filled and committed on the second connection takes the
-- place of graph_next's table of that name (a catalog change; its rows and indexes move
-- with it). If the load then fails, the rollback puts it back in the staging schema.
DROP TABLE IF EXISTS {table};
ALTER TABLE {staged} SET SCHEMA graph_next;
