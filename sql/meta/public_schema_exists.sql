-- Returns whether the database has a schema named public (pg_namespace's name index).
SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = 'public') AS present;
