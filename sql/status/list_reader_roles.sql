-- Returns each read-only role made by `registry db create-reader` and whether it still exists
-- as a role of the server, by name; registry_meta.reader_roles is tiny, pg_roles by name.
SELECT r.role_name, (p.rolname IS NOT NULL) AS role_exists
FROM registry_meta.reader_roles AS r
LEFT JOIN pg_roles AS p ON p.rolname = r.role_name
ORDER BY r.role_name;
