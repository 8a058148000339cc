-- The oldest since of generation n (docs/api.md, "Changes between generations"), as a value:
-- the since of registry_meta.oldest_since_row(n), where it is defined. For the load
-- (build_net_changes), the upgrades and the statements that ask once; a statement that asks
-- per request reads oldest_since_row, which is inlined where this is not.
CREATE OR REPLACE FUNCTION registry_meta.oldest_since(n bigint) RETURNS bigint
LANGUAGE sql STABLE AS $fn$
    SELECT o.since FROM registry_meta.oldest_since_row(n) AS o
$fn$;
