-- Returns what disqualifies an existing role from being the read-only role: its attributes,
-- whether it is (or can act as) the role running this command, and how many schemas or
-- objects in the registry's schemas (graph*, registry_meta) it owns or can act as the owner
-- of. No row when the role does not exist. Served by the catalogs' own indexes.
WITH candidate AS (
    SELECT oid, rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls
    FROM pg_roles
    WHERE rolname = %(role)s
),
registry_schemas AS (
    SELECT oid, nspowner FROM pg_namespace
    WHERE nspname = 'registry_meta' OR nspname LIKE 'graph%%'
),
owners AS (
    SELECT nspowner AS owner FROM registry_schemas
    UNION SELECT relowner FROM pg_class WHERE relnamespace IN (SELECT oid FROM registry_schemas)
    UNION SELECT proowner FROM pg_proc WHERE pronamespace IN (SELECT oid FROM registry_schemas)
    UNION SELECT typowner FROM pg_type WHERE typnamespace IN (SELECT oid FROM registry_schemas)
)
SELECT
    candidate.rolsuper AS superuser,
    candidate.rolcreaterole AS create_role,
    candidate.rolcreatedb AS create_db,
    candidate.rolreplication AS replication,
    candidate.rolbypassrls AS bypass_rls,
    pg_has_role(candidate.oid, current_user, 'USAGE') AS acts_as_loader,
    (SELECT count(*) FROM owners WHERE pg_has_role(candidate.oid, owners.owner, 'USAGE'))
        AS owner_of
FROM candidate;
