-- Generations (docs/api.md, Generations and conditional requests): every committed load gets the
-- next number of a sequence, and registry_meta.generations remembers each one, kept or dropped, so
-- that a pinned read can tell "no longer kept" (410) from "never produced" (400). Numbers taken by
-- a load that failed leave gaps: those generations were never produced.
CREATE SEQUENCE registry_meta.generation_seq AS bigint MINVALUE 1;

CREATE TABLE registry_meta.generations (
    generation   bigint PRIMARY KEY,
    -- the moment the load committed (see sql/load/record_generation.sql)
    committed_at timestamptz NOT NULL,
    origins      bigint NOT NULL,
    -- every table and index of the generation's schema, measured after its load
    size_bytes   bigint,
    -- set in the transaction that drops the generation's schema
    dropped_at   timestamptz
);

-- A graph loaded by earlier code becomes generation 1: its graph_info row gains the columns
-- every load now writes, and read-only roles may read the generation list.
DO $upgrade$
DECLARE
    reader text;
BEGIN
    IF to_regclass('graph.graph_info') IS NOT NULL THEN
        ALTER TABLE graph.graph_info
            ADD COLUMN IF NOT EXISTS generation bigint,
            ADD COLUMN IF NOT EXISTS committed_at timestamptz,
            ADD COLUMN IF NOT EXISTS format text;
        UPDATE graph.graph_info
        SET generation = nextval('registry_meta.generation_seq'),
            committed_at = loaded_at,
            schema_version = 2;
        INSERT INTO registry_meta.generations (generation, committed_at, origins)
        SELECT generation, committed_at, (SELECT count(*) FROM graph.origin_rows)
        FROM graph.graph_info;
    END IF;
    FOR reader IN SELECT role_name FROM registry_meta.reader_roles LOOP
        EXECUTE format('GRANT SELECT ON registry_meta.generations TO %I', reader);
    END LOOP;
END
$upgrade$;
