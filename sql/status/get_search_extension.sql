-- Returns pg_trgm's installed version (null when not installed) and whether the server could
-- install it (one row); the catalogs pg_extension and pg_available_extensions, both tiny.
SELECT (SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm') AS installed,
       EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') AS available;
