-- Returns each privilege on a server setting (SET, ALTER SYSTEM; PostgreSQL 15 and later)
-- that the role %(role)s holds, granted to it, to a role it is a member of, or to PUBLIC:
-- privilege, 'parameter', its name, the role it comes through. Run only on servers that
-- have pg_parameter_acl.
WITH candidate AS (
    SELECT oid FROM pg_roles WHERE rolname = %(role)s
)
SELECT a.privilege_type AS privilege, 'parameter' AS kind, p.parname::text AS name,
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END
           AS grantee
FROM pg_parameter_acl AS p,
LATERAL aclexplode(p.paracl) AS a,
candidate
WHERE CASE WHEN a.grantee = 0 THEN true
           ELSE pg_has_role(candidate.oid, a.grantee, 'MEMBER') END
ORDER BY p.parname, a.privilege_type;
