-- Change sets kept longer than graphs (docs/api.md, Changes since any generation). A generation's
-- change set (docs/api.md, Changes between generations) used to live only in its graph's schema and
-- went with it; now each load also copies it into registry_meta.change_log, which keeps the newest
-- REGISTRY_KEEP_CHANGES change sets whether or not their graphs are still kept. A kept change set
-- costs rows in proportion to its changes, never to the graph.
--
-- registry_meta.generations says whether each generation's change set is still kept
-- (changes_dropped_at, set when its rows are deleted, or at once for a change set that was
-- never recorded) and its size (change_bytes, the bytes of its rows, set by the load).
ALTER TABLE registry_meta.generations
    ADD COLUMN change_bytes       bigint,
    ADD COLUMN changes_dropped_at timestamptz;

-- One row per origin per kept change set: the change as docs/api.md, Changes between generations
-- states it, the records before and after as the API answered them (text, exactly as sent), their
-- content hashes (md5 as uuid, as origin_doc_hashes), the hashes of their four top-level blocks in
-- the order origin, governance, bans, presentations (NULL in a database's first change set, which
-- nothing compares), and the name and address of each side (for the CSV of net changes).
CREATE TABLE registry_meta.change_log (
    generation     bigint NOT NULL,
    id             uuid NOT NULL,
    kind           text NOT NULL,
    blocks         text[] NOT NULL,
    before         text,
    after          text,
    before_hash    uuid,
    after_hash     uuid,
    before_blocks  uuid[],
    after_blocks   uuid[],
    before_name    text,
    before_address text,
    after_name     text,
    after_address  text,
    PRIMARY KEY (id, generation)
) WITH (toast_tuple_target = 128);
-- The records themselves live out of line, uncompressed: a load's net changes read every
-- kept row's ids and hashes (build_net_changes), which stay a narrow heap however long the
-- records; a page fetches only its own rows' records. Uncompressed, because a database's
-- first change set copies every record once and compressing it would cost that load time.
ALTER TABLE registry_meta.change_log
    ALTER COLUMN before SET STORAGE EXTERNAL,
    ALTER COLUMN after SET STORAGE EXTERNAL;
-- Retention deletes one generation's rows; the net changes of a load read the kept ones.
CREATE INDEX change_log_generation_idx ON registry_meta.change_log (generation);

-- The net changes from any kept since m to generation n (docs/api.md, Changes since any
-- generation), built by the load that produced n (and kept while n's graph is kept). For each
-- origin id in the change sets after the oldest since up to n, each version of its record that
-- differs from its record at n has one row, valid for since in [lo, until): that version is the
-- record as it was just before the change of generation `until` (change_log (id, until).before),
-- and the record at n is change_log (id, last).after, last being the origin's last change up to n.
-- So the net changes of (m, n) are the rows of n with lo <= m < until: at most one per origin id.
CREATE TABLE registry_meta.net_changes (
    generation bigint NOT NULL,
    id         uuid NOT NULL,
    lo         bigint NOT NULL,
    until      bigint NOT NULL,
    last       bigint NOT NULL,
    kind       text NOT NULL,
    blocks     text[] NOT NULL,
    PRIMARY KEY (generation, id, until) INCLUDE (lo, last, kind, blocks)
);
CREATE INDEX net_changes_kind_idx
    ON registry_meta.net_changes (generation, kind, id) INCLUDE (lo, until, last, blocks);

-- The counts of the net changes of (since, generation) for every produced since from the
-- oldest since up to the generation: per kind, and of the changed ones per block.
CREATE TABLE registry_meta.net_counts (
    generation    bigint NOT NULL,
    since         bigint NOT NULL,
    added         bigint NOT NULL,
    removed       bigint NOT NULL,
    changed       bigint NOT NULL,
    origin        bigint NOT NULL,
    governance    bigint NOT NULL,
    bans          bigint NOT NULL,
    presentations bigint NOT NULL,
    PRIMARY KEY (generation, since)
);

-- The functions that read and build these tables (net_change_json, net_change_csv,
-- oldest_since, build_net_changes) are repeatable definitions, one file each in
-- sql/definitions, applied after the migrations by every upgrade and load.

-- A database made before this migration: a change set that lived in a dropped graph is gone,
-- one that was never recorded (generations loaded before migration 003: counts NULL) is not
-- kept; every kept graph's change set is copied into change_log (its after is that graph's
-- origin_docs at after_pos), and each kept graph says it has what this schema version's graphs
-- have (graph_info.schema_version, which readiness checks). Read-only roles may read the new
-- tables. Each kept graph's net changes are built once the definitions are applied
-- (sql/migrations/after_definitions/004_change_log.sql).
UPDATE registry_meta.generations
SET changes_dropped_at = coalesce(dropped_at, now())
WHERE dropped_at IS NOT NULL OR added IS NULL;

DO $upgrade$
DECLARE
    kept record;
    reader text;
BEGIN
    FOR kept IN
        SELECT g.generation, s.nspname, g.previous IS NULL AS first
        FROM registry_meta.generations AS g
        CROSS JOIN LATERAL (
            SELECT n.nspname FROM pg_namespace AS n
            WHERE n.nspname IN ('graph', 'graph_g' || g.generation)
              AND to_regclass(format('%I.graph_info', n.nspname)) IS NOT NULL
        ) AS s
        WHERE g.changes_dropped_at IS NULL
        ORDER BY g.generation
    LOOP
        -- `graph` holds the live generation only: skip it for any other one.
        CONTINUE WHEN kept.nspname = 'graph' AND NOT EXISTS (
            SELECT FROM graph.graph_info AS i WHERE i.generation = kept.generation);
        EXECUTE format($sql$
            INSERT INTO registry_meta.change_log
                (generation, id, kind, blocks, before, after, before_hash, after_hash,
                 before_blocks, after_blocks, before_name, before_address, after_name,
                 after_address)
            SELECT %2$s, c.id, c.kind, c.blocks, c.before, d.doc,
                   md5(c.before)::uuid, md5(d.doc)::uuid,
                   CASE WHEN j.bj IS NOT NULL THEN ARRAY[
                       md5((j.bj -> 'origin')::text)::uuid,
                       md5((j.bj -> 'governance')::text)::uuid,
                       md5((j.bj -> 'bans')::text)::uuid,
                       md5((j.bj -> 'presentations')::text)::uuid] END,
                   CASE WHEN j.aj IS NOT NULL THEN ARRAY[
                       md5((j.aj -> 'origin')::text)::uuid,
                       md5((j.aj -> 'governance')::text)::uuid,
                       md5((j.aj -> 'bans')::text)::uuid,
                       md5((j.aj -> 'presentations')::text)::uuid] END,
                   CASE WHEN c.kind = 'removed' THEN c.name
                        ELSE j.bj -> 'origin' ->> 'name' END,
                   CASE WHEN c.kind = 'removed' THEN c.address
                        ELSE j.bj -> 'bans' ->> 'address' END,
                   CASE WHEN c.kind <> 'removed' THEN c.name END,
                   CASE WHEN c.kind <> 'removed' THEN c.address END
            FROM %1$I.changes AS c
            LEFT JOIN %1$I.origin_docs AS d ON d.pos = c.after_pos
            CROSS JOIN LATERAL (
                SELECT CASE WHEN NOT %3$L::boolean THEN c.before::jsonb END AS bj,
                       CASE WHEN NOT %3$L::boolean THEN d.doc::jsonb END AS aj
            ) AS j
        $sql$, kept.nspname, kept.generation, kept.first);
        UPDATE registry_meta.generations AS g
        SET change_bytes = (SELECT coalesce(sum(pg_column_size(l.*)), 0)
                            FROM registry_meta.change_log AS l
                            WHERE l.generation = kept.generation)
        WHERE g.generation = kept.generation;
    END LOOP;
    FOR kept IN SELECT nspname FROM pg_namespace
                WHERE (nspname = 'graph' OR nspname LIKE 'graph\_g%')
                  AND to_regclass(format('%I.graph_info', nspname)) IS NOT NULL LOOP
        EXECUTE format('UPDATE %I.graph_info SET schema_version = 4', kept.nspname);
    END LOOP;
    FOR reader IN SELECT role_name FROM registry_meta.reader_roles LOOP
        EXECUTE format('GRANT SELECT ON registry_meta.change_log, registry_meta.net_changes, '
                       'registry_meta.net_counts TO %I', reader);
    END LOOP;
END
$upgrade$;
