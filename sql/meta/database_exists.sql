-- Returns whether a database of this name exists on the server.
SELECT EXISTS (SELECT FROM pg_database WHERE datname = %(name)s);
