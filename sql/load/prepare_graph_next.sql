-- A clean schema to build the next graph in (left over from an interrupted load otherwise),
-- and no staging schema of an interrupted load (the loads before this one have ended: the
-- caller holds the load lock).
DROP SCHEMA IF EXISTS graph_next CASCADE;
DROP SCHEMA IF EXISTS graph_old CASCADE;
DO $$
DECLARE
    stage name;
BEGIN
    FOR stage IN SELECT nspname FROM pg_namespace WHERE nspname LIKE 'graph\_stage\_%' LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', stage);
    END LOOP;
END
$$;
CREATE SCHEMA graph_next;
