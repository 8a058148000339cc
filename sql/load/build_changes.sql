-- The change set of the graph being built (graph_next) against the live one (graph, the
-- previous generation), docs/api.md, Changes between generations: one row per origin added, removed
-- or changed, numbered by origin id. Records are compared as the API answers them, by the content
-- hash of each stored record (origin_doc_hashes: build_doc_hashes.sql), in one full join on the
-- origin id; only the records whose hashes differ are decoded (jsonb), to name the top-level blocks
-- that differ, and to drop those equal as values: a graph kept from before records were sent in
-- their canonical form (keys sorted, docs/api.md "Digests") holds the same record in another
-- text, so the first load after that upgrade decodes each of its records once. before is the previous record, kept here so that the change set outlives the
-- previous generation; after is read from this generation's origin_docs by after_pos. name
-- and address (for CSV) are those of after, or of before for a removed origin.
-- The origins whose hashes differ go to a temporary table first, with statistics: usually a
-- few thousand of a million, so the lookups below are index probes, not scans of whole tables.
CREATE TEMP TABLE change_differ ON COMMIT DROP AS
WITH old AS (
    SELECT r.id, r.pos, h.hash
    FROM graph.origin_rows AS r
    JOIN graph.origin_doc_hashes AS h ON h.pos = r.pos
), new AS (
    SELECT r.id, r.pos, h.hash
    FROM graph_next.origin_rows AS r
    JOIN graph_next.origin_doc_hashes AS h ON h.pos = r.pos
)
SELECT coalesce(n.id, o.id) AS id, o.pos AS old_pos, n.pos AS new_pos
FROM old AS o
FULL JOIN new AS n ON n.id = o.id
WHERE o.hash IS DISTINCT FROM n.hash;
ANALYZE pg_temp.change_differ;
CREATE TABLE changes AS
WITH found AS (
    SELECT x.id,
           CASE WHEN x.old_pos IS NULL THEN 'added'
                WHEN x.new_pos IS NULL THEN 'removed'
                ELSE 'changed' END AS kind,
           CASE WHEN x.old_pos IS NULL OR x.new_pos IS NULL THEN '{}'::text[]
                ELSE array_remove(ARRAY[
                    CASE WHEN bj -> 'origin' IS DISTINCT FROM aj -> 'origin' THEN 'origin' END,
                    CASE WHEN bj -> 'governance' IS DISTINCT FROM aj -> 'governance'
                         THEN 'governance' END,
                    CASE WHEN bj -> 'bans' IS DISTINCT FROM aj -> 'bans' THEN 'bans' END,
                    CASE WHEN bj -> 'presentations' IS DISTINCT FROM aj -> 'presentations'
                         THEN 'presentations' END], NULL) END AS blocks,
           od.doc AS before,
           x.new_pos AS after_pos,
           coalesce(no.name, oo.name) AS name,
           CASE WHEN x.new_pos IS NOT NULL
                THEN CASE WHEN nr.allocated THEN concat_ws('.', nr.address_network,
                                                           nr.address_station,
                                                           nr.address_channel) END
                ELSE CASE WHEN orr.allocated THEN concat_ws('.', orr.address_network,
                                                            orr.address_station,
                                                            orr.address_channel) END
           END AS address
    FROM pg_temp.change_differ AS x
    LEFT JOIN graph.origin_docs AS od ON od.pos = x.old_pos
    LEFT JOIN graph_next.origin_docs AS nd ON nd.pos = x.new_pos AND x.old_pos IS NOT NULL
    LEFT JOIN graph.origin_rows AS orr ON orr.pos = x.old_pos AND x.new_pos IS NULL
    LEFT JOIN graph_next.origin_rows AS nr ON nr.pos = x.new_pos
    LEFT JOIN graph.origins AS oo ON oo.id = x.id AND x.new_pos IS NULL
    LEFT JOIN graph_next.origins AS no ON no.id = x.id
    CROSS JOIN LATERAL (
        SELECT CASE WHEN x.old_pos IS NOT NULL AND x.new_pos IS NOT NULL
                    THEN od.doc::jsonb END AS bj,
               CASE WHEN x.old_pos IS NOT NULL AND x.new_pos IS NOT NULL
                    THEN nd.doc::jsonb END AS aj
    ) AS j
    WHERE x.old_pos IS NULL OR x.new_pos IS NULL OR j.bj IS DISTINCT FROM j.aj
)
SELECT (row_number() OVER (ORDER BY id))::integer AS pos,
       (row_number() OVER (PARTITION BY kind ORDER BY id))::integer AS kind_pos,
       id, kind, blocks, before, after_pos, name, address
FROM found;
