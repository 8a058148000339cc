-- Changes between generations (docs/api.md, Changes between generations): each generation remembers
-- the generation it was compared with (previous, NULL for the first) and how many origins it added,
-- removed and changed. Generations produced before this migration have no change set: NULLs.
ALTER TABLE registry_meta.generations
    ADD COLUMN previous bigint,
    ADD COLUMN added    bigint,
    ADD COLUMN removed  bigint,
    ADD COLUMN changed  bigint;

-- Every generation already kept gets an empty change set of the shape a load now builds
-- (sql/load/number_changes.sql), so that /registry/changes answers for it too: no changes,
-- and counts of null (unknown) from the columns above. Its graph then has what this schema
-- version's graphs have, and says so (graph_info.schema_version, which readiness checks).
DO $upgrade$
DECLARE
    kept name;
    reader text;
BEGIN
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.origin_docs', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 3', kept);
        CONTINUE WHEN to_regclass(format('%I.changes', kept)) IS NOT NULL;
        EXECUTE format($sql$
            CREATE TABLE %1$I.changes (
                pos integer PRIMARY KEY, kind_pos integer NOT NULL, id uuid NOT NULL,
                kind text NOT NULL, blocks text[] NOT NULL, before text, after_pos integer,
                name text, address text);
            CREATE UNIQUE INDEX ON %1$I.changes (kind, kind_pos);
            CREATE TABLE %1$I.change_blocks (
                block text, block_pos integer, pos integer NOT NULL,
                PRIMARY KEY (block, block_pos));
            CREATE TABLE %1$I.change_counts (kind text, block text, n bigint);
            CREATE VIEW %1$I.change_lines AS
            SELECT c.pos, c.kind, c.kind_pos, c.id, NULL::text AS line, NULL::text AS csv_line
            FROM %1$I.changes AS c;
        $sql$, kept);
        FOR reader IN SELECT role_name FROM registry_meta.reader_roles LOOP
            EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', kept, reader);
        END LOOP;
    END LOOP;
END
$upgrade$;
