-- Returns whether a role of this name exists.
SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = %(role)s) AS present;
