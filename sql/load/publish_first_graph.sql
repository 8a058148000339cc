-- Makes graph_next the live graph when the database has none yet.
ALTER SCHEMA graph_next RENAME TO graph;
