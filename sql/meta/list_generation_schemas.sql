-- Returns the schema of every kept generation older than the live one (graph_g<n>).
SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph_g[0-9]+$' ORDER BY nspname;
