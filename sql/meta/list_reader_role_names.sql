-- Returns the name of every registered read-only role (registry_meta.reader_roles), by name:
-- a load grants each SELECT on the graph it builds (registry.loader.statements.grant_readers),
-- and an upgrade on what it adds to a kept graph (registry.database.empty_change_sets).
SELECT role_name FROM registry_meta.reader_roles ORDER BY role_name;
