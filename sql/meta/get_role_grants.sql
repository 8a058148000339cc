-- Returns each privilege beyond reading that the role %(role)s holds on an object of this
-- database: granted to it, to a role it is a member of (directly or not, inheriting or
-- not), or to PUBLIC; an owner's implicit privileges count (acldefault), so owning a table
-- anywhere is INSERT on it; the server's own initial grants do not (pg_init_privs).
-- Reading is SELECT on tables, views, sequences, columns and large objects, and EXECUTE on
-- functions that run with the caller's rights; everything else
-- counts (INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER, MAINTAIN; USAGE on a
-- sequence, which is nextval; EXECUTE on a SECURITY DEFINER function; USAGE on a
-- foreign-data wrapper or server), and so do default privileges (ALTER DEFAULT PRIVILEGES)
-- that would give it any of them on tables made later, the loader's next graph included.
-- Schemas and the database itself are judged by get_role_powers.sql. One row each:
-- privilege, kind of object, its name, the role it comes through. No row: nothing found.
WITH candidate AS (
    SELECT oid FROM pg_roles WHERE rolname = %(role)s
),
held AS (
    SELECT CASE c.relkind WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
                ELSE 'table' END AS kind,
           format('%%I.%%I', n.nspname, c.relname) AS name,
           a.privilege_type AS privilege, a.grantee
    FROM pg_class AS c
    JOIN pg_namespace AS n ON n.oid = c.relnamespace,
    LATERAL aclexplode(coalesce(c.relacl, acldefault(
        CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) AS a
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
      AND a.privilege_type <> 'SELECT'
      -- the server's own grants at initdb or by an extension's script (UPDATE on
      -- pg_catalog.pg_settings to PUBLIC, which is SET): what every session may do anyway
      AND NOT EXISTS (
          SELECT FROM pg_init_privs AS i, LATERAL aclexplode(i.initprivs) AS ia
          WHERE i.objoid = c.oid AND i.classoid = 'pg_class'::regclass AND i.objsubid = 0
            AND ia.grantee = a.grantee AND ia.privilege_type = a.privilege_type)
    UNION ALL
    SELECT 'column', format('%%I.%%I.%%I', n.nspname, c.relname, t.attname),
           a.privilege_type, a.grantee
    FROM pg_attribute AS t
    JOIN pg_class AS c ON c.oid = t.attrelid
    JOIN pg_namespace AS n ON n.oid = c.relnamespace,
    LATERAL aclexplode(t.attacl) AS a
    WHERE t.attacl IS NOT NULL AND t.attnum > 0 AND NOT t.attisdropped
      AND a.privilege_type <> 'SELECT'
    UNION ALL
    SELECT 'function',
           format('%%I.%%I(%%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)),
           a.privilege_type, a.grantee
    FROM pg_proc AS p
    JOIN pg_namespace AS n ON n.oid = p.pronamespace,
    LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
    WHERE p.prosecdef
    UNION ALL
    SELECT 'large object', l.oid::text, a.privilege_type, a.grantee
    FROM pg_largeobject_metadata AS l,
    LATERAL aclexplode(coalesce(l.lomacl, acldefault('L', l.lomowner))) AS a
    WHERE a.privilege_type <> 'SELECT'
    UNION ALL
    SELECT 'foreign-data wrapper', w.fdwname::text, a.privilege_type, a.grantee
    FROM pg_foreign_data_wrapper AS w,
    LATERAL aclexplode(coalesce(w.fdwacl, acldefault('F', w.fdwowner))) AS a
    UNION ALL
    SELECT 'foreign server', s.srvname::text, a.privilege_type, a.grantee
    FROM pg_foreign_server AS s,
    LATERAL aclexplode(coalesce(s.srvacl, acldefault('S', s.srvowner))) AS a
    UNION ALL
    SELECT CASE d.defaclobjtype WHEN 'r' THEN 'tables' WHEN 'S' THEN 'sequences'
                WHEN 'f' THEN 'functions' WHEN 'T' THEN 'types' ELSE 'schemas' END
               || ' created later',
           coalesce('in schema ' || quote_ident(n.nspname), 'anywhere')
               || ' by ' || quote_ident(pg_get_userbyid(d.defaclrole)),
           a.privilege_type, a.grantee
    FROM pg_default_acl AS d
    LEFT JOIN pg_namespace AS n ON n.oid = d.defaclnamespace,
    LATERAL aclexplode(d.defaclacl) AS a
    WHERE a.privilege_type <> CASE d.defaclobjtype WHEN 'r' THEN 'SELECT' WHEN 'S' THEN 'SELECT'
                                   WHEN 'f' THEN 'EXECUTE' ELSE 'USAGE' END
)
SELECT held.privilege, held.kind, held.name,
       CASE held.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(held.grantee)::text END
           AS grantee
FROM held, candidate
WHERE CASE WHEN held.grantee = 0 THEN true
           ELSE pg_has_role(candidate.oid, held.grantee, 'MEMBER') END
ORDER BY held.kind, held.name, held.privilege;
