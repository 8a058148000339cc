-- Any page of the net changes since any kept since costs about what the first does
-- (docs/api.md, "Changes since any generation"). The oldest since's rows are numbered (pos,
-- migration 006) and the previous generation's are a range of their own (until = n), but a
-- since between them walked net_changes from its first row to the page: at 1,000,000
-- origins after 20 twins, the last page of the since 10 loads back (453 pages) took x4 of the
-- first page's p99. net_buckets counts, per generation n, since and id bucket (the origin
-- ids whose first byte is the bucket's: 256 buckets, each starting at the uuid `start`), how
-- many net changes answer that since: in all (what = ''), of each kind and of each block
-- (what names it). A page finds the bucket it starts in from the running sum of those
-- counts, and walks net_changes from that bucket's first id only. The load builds them with
-- the net changes (registry_meta.build_net_buckets, sql/definitions); a change-set drop
-- deletes those of the sinces it ends; a generation's go with its net changes.
CREATE TABLE IF NOT EXISTS registry_meta.net_buckets (
    generation bigint NOT NULL,
    since      bigint NOT NULL,
    what       text NOT NULL,
    start      uuid NOT NULL,
    total      bigint NOT NULL,
    PRIMARY KEY (generation, since, what, start) INCLUDE (total)
);

-- Read-only roles may read it, as they read the net changes (registry.database.roles).
DO $upgrade$
DECLARE
    kept record;
    reader text;
BEGIN
    FOR reader IN SELECT role_name FROM registry_meta.reader_roles LOOP
        EXECUTE format('GRANT SELECT ON registry_meta.net_buckets TO %I', reader);
    END LOOP;
    -- The graphs kept say they have what this schema version's graphs have.
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 11', kept.nspname);
    END LOOP;
END
$upgrade$;
