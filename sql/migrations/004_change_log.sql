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

-- Each net change as the API sends it (docs/api.md, Changes since any generation, as a change of
-- docs/api.md, Changes between generations), from its origin id, kind, blocks and the two records
-- (before: the version's record, kept as the before of the change that ended it; after: the record
-- at n, kept as the after of the origin's last change up to n): net_change_json, the JSON object of
-- changes[] and of an NDJSON export; net_change_csv, its CSV row (id, kind, blocks, name, address:
-- of the record at n, or of the version for a removed origin) as Python's csv module writes it, the
-- name with the spreadsheet guard of sql/load/build_origin_csv.sql. Plain SQL expressions, which
-- the planner inlines into each statement that uses them (sql/changes/*net_changes*.sql).
CREATE FUNCTION registry_meta.net_change_json(
    id uuid, kind text, blocks text[], before text, after text
) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
    SELECT '{"id":"svc:origin:' || id::text || '","kind":"' || kind || '","blocks":'
           || array_to_json(blocks)::text || ',"before":' || coalesce(before, 'null')
           || ',"after":' || coalesce(after, 'null') || '}'
$fn$;

CREATE FUNCTION registry_meta.net_change_csv(
    id uuid, kind text, blocks text[], name text, address text
) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
    SELECT concat('svc:origin:' || id::text, ',', kind, ',', array_to_string(blocks, ';'), ',',
                  CASE WHEN g.name ~ E'[",\r\n]'
                       THEN '"' || replace(g.name, '"', '""') || '"' ELSE g.name END, ',',
                  address, E'\r\n')
    FROM (SELECT CASE WHEN left(name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                      THEN '''' ELSE '' END || name AS name) AS g
$fn$;

-- The oldest since of generation n (docs/api.md, Changes since any generation): the smallest m such
-- that the change set of every generation after m, up to n, is kept. That is the newest generation
-- up to n whose change set is not kept; when every one is, the first generation ever committed.
CREATE FUNCTION registry_meta.oldest_since(n bigint) RETURNS bigint
LANGUAGE sql STABLE AS $fn$
    SELECT coalesce(
        (SELECT max(g.generation) FROM registry_meta.generations AS g
         WHERE g.generation <= n AND g.changes_dropped_at IS NOT NULL),
        (SELECT min(g.generation) FROM registry_meta.generations AS g))
$fn$;

-- Builds net_changes and net_counts of generation n from the kept change sets up to n (see
-- above): run by the load that produces n, in its transaction, once n's change set is in
-- change_log. Each version's kind and blocks compare its hashes with the record at n's.
CREATE FUNCTION registry_meta.build_net_changes(n bigint) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM registry_meta.net_changes WHERE generation = n;
    DELETE FROM registry_meta.net_counts WHERE generation = n;
    INSERT INTO registry_meta.net_changes (generation, id, lo, until, last, kind, blocks)
    WITH s AS (
        SELECT registry_meta.oldest_since(n) AS since
    ), c AS (
        SELECT l.id, l.generation, l.before_hash, l.before_blocks,
               coalesce(lag(l.generation) OVER w, s.since) AS lo,
               max(l.generation) OVER (PARTITION BY l.id) AS last
        FROM registry_meta.change_log AS l
        CROSS JOIN s
        WHERE l.generation > s.since AND l.generation <= n
        WINDOW w AS (PARTITION BY l.id ORDER BY l.generation)
    )
    SELECT n, c.id, c.lo, c.generation, c.last,
           CASE WHEN c.before_hash IS NULL THEN 'added'
                WHEN z.after_hash IS NULL THEN 'removed'
                ELSE 'changed' END,
           CASE WHEN c.before_hash IS NULL OR z.after_hash IS NULL THEN '{}'::text[]
                ELSE array_remove(ARRAY[
                    CASE WHEN c.before_blocks[1] IS DISTINCT FROM z.after_blocks[1]
                         THEN 'origin' END,
                    CASE WHEN c.before_blocks[2] IS DISTINCT FROM z.after_blocks[2]
                         THEN 'governance' END,
                    CASE WHEN c.before_blocks[3] IS DISTINCT FROM z.after_blocks[3]
                         THEN 'bans' END,
                    CASE WHEN c.before_blocks[4] IS DISTINCT FROM z.after_blocks[4]
                         THEN 'presentations' END], NULL) END
    FROM c
    JOIN registry_meta.change_log AS z ON z.id = c.id AND z.generation = c.last
    WHERE c.before_hash IS DISTINCT FROM z.after_hash;
    -- The counts for every since: a running sum of +1 where a row begins to count (lo) and
    -- -1 where it stops (until), over the produced generations from the oldest since to n.
    INSERT INTO registry_meta.net_counts
        (generation, since, added, removed, changed, origin, governance, bans, presentations)
    WITH events AS (
        SELECT x.lo AS at, 1 AS d, x.kind, x.blocks
        FROM registry_meta.net_changes AS x WHERE x.generation = n
        UNION ALL
        SELECT x.until, -1, x.kind, x.blocks
        FROM registry_meta.net_changes AS x WHERE x.generation = n
    ), steps AS (
        SELECT at,
               coalesce(sum(d) FILTER (WHERE kind = 'added'), 0) AS added,
               coalesce(sum(d) FILTER (WHERE kind = 'removed'), 0) AS removed,
               coalesce(sum(d) FILTER (WHERE kind = 'changed'), 0) AS changed,
               coalesce(sum(d) FILTER (WHERE 'origin' = ANY (blocks)), 0) AS origin,
               coalesce(sum(d) FILTER (WHERE 'governance' = ANY (blocks)), 0) AS governance,
               coalesce(sum(d) FILTER (WHERE 'bans' = ANY (blocks)), 0) AS bans,
               coalesce(sum(d) FILTER (WHERE 'presentations' = ANY (blocks)), 0)
                   AS presentations
        FROM events GROUP BY at
    )
    SELECT n, g.generation,
           coalesce(sum(t.added), 0), coalesce(sum(t.removed), 0), coalesce(sum(t.changed), 0),
           coalesce(sum(t.origin), 0), coalesce(sum(t.governance), 0),
           coalesce(sum(t.bans), 0), coalesce(sum(t.presentations), 0)
    FROM registry_meta.generations AS g
    LEFT JOIN steps AS t ON t.at <= g.generation
    WHERE g.generation >= registry_meta.oldest_since(n) AND g.generation <= n
    GROUP BY g.generation;
$fn$;

-- A database made before this migration: a change set that lived in a dropped graph is gone,
-- one that was never recorded (generations loaded before migration 003: counts NULL) is not
-- kept; every kept graph's change set is copied into change_log (its after is that graph's
-- origin_docs at after_pos), each kept graph gets its net changes, and says it has what this
-- schema version's graphs have (graph_info.schema_version, which readiness checks).
-- Read-only roles may read the new tables.
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
    FOR kept IN
        SELECT g.generation FROM registry_meta.generations AS g
        WHERE g.dropped_at IS NULL ORDER BY g.generation
    LOOP
        PERFORM registry_meta.build_net_changes(kept.generation);
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
