-- Returns the schema of every kept graph: the live `graph` and each graph_g<n> (catalog).
SELECT n.nspname AS schema
FROM pg_namespace AS n
WHERE (n.nspname = 'graph' OR n.nspname ~ '^graph_g[0-9]+$')
  AND to_regclass(format('%I.graph_info', n.nspname)) IS NOT NULL
ORDER BY n.nspname;
