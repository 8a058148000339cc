-- The oldest since of generation n (contract 12): the smallest m such that the change set of
-- every generation after m, up to n, is kept. That is the newest generation up to n whose
-- change set is not kept; when every one is, the first generation ever committed; NULL when
-- none was.
CREATE OR REPLACE FUNCTION registry_meta.oldest_since(n bigint) RETURNS bigint
LANGUAGE sql STABLE AS $fn$
    SELECT coalesce(
        (SELECT max(g.generation) FROM registry_meta.generations AS g
         WHERE g.generation <= n AND g.changes_dropped_at IS NOT NULL),
        (SELECT min(g.generation) FROM registry_meta.generations AS g))
$fn$;
