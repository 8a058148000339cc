-- Returns what an existing role could do in this database and on its server beyond reading:
-- the predefined roles (pg_*) it is a member of, directly or through other roles, inheriting
-- or not, other than those in %(reading)s; the schemas it may create objects in; whether it
-- may create schemas and temporary tables in this database. No row when the role does not
-- exist. Served by the catalogs' own indexes.
WITH candidate AS (
    SELECT oid FROM pg_roles WHERE rolname = %(role)s
)
SELECT
    ARRAY(
        SELECT predefined.rolname::text FROM pg_roles AS predefined
        -- predefined roles are made by initdb (object ids below FirstNormalObjectId)
        WHERE predefined.oid < 16384
            AND predefined.rolname LIKE 'pg\_%%'
            AND predefined.rolname <> ALL (%(reading)s::text[])
            AND pg_has_role(candidate.oid, predefined.oid, 'MEMBER')
        ORDER BY predefined.rolname
    ) AS predefined_roles,
    ARRAY(
        SELECT nspname::text FROM pg_namespace
        WHERE has_schema_privilege(candidate.oid, pg_namespace.oid, 'CREATE')
        ORDER BY nspname
    ) AS create_in_schemas,
    has_database_privilege(candidate.oid, current_database(), 'CREATE') AS create_schemas,
    has_database_privilege(candidate.oid, current_database(), 'TEMPORARY') AS temporary_tables
FROM candidate;
