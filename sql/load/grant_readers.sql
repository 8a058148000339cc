-- Lets every registered read-only role read the graph being built.
SELECT role_name FROM registry_meta.reader_roles ORDER BY role_name;
