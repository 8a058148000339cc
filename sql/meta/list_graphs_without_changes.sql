-- Returns the schema of every kept graph loaded before change sets (migration 003): it has its
-- records (origin_docs) and no change set (changes); catalog only.
SELECT n.nspname AS schema
FROM pg_namespace AS n
WHERE (n.nspname = 'graph' OR n.nspname ~ '^graph_g[0-9]+$')
  AND to_regclass(format('%I.origin_docs', n.nspname)) IS NOT NULL
  AND to_regclass(format('%I.changes', n.nspname)) IS NULL
ORDER BY n.nspname;
