-- Forgets, in the load's transaction, every registered read-only role that no longer exists
-- (dropped outside the service); returns their names, for the load's warning lines.
DELETE FROM registry_meta.reader_roles AS r
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE pg_roles.rolname = r.role_name)
RETURNING r.role_name;
