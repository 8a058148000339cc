-- The change set of the graph being built (graph_next) against the live one (graph, the
-- previous generation): one row per origin added, removed or changed (contract 10).
-- Records are compared as the API answers them, by a hash of each stored record (origin_docs:
-- the exact JSON text every answer sends), joined on the origin id; only the origins whose
-- hashes differ are decoded, to name the top-level blocks that differ. before is the previous
-- record, kept here so the change set outlives the previous generation; after is read from
-- this generation's origin_docs by after_pos. name and address (for CSV) are those of after,
-- or of before for a removed origin.
CREATE TEMP TABLE found_changes ON COMMIT DROP AS
WITH old AS (
    SELECT r.id, r.pos, md5(d.doc) AS hash
    FROM graph.origin_rows AS r
    JOIN graph.origin_docs AS d ON d.pos = r.pos
), new AS (
    SELECT r.id, r.pos, md5(d.doc) AS hash
    FROM graph_next.origin_rows AS r
    JOIN graph_next.origin_docs AS d ON d.pos = r.pos
), differ AS (
    SELECT coalesce(n.id, o.id) AS id, o.pos AS old_pos, n.pos AS new_pos
    FROM old AS o
    FULL JOIN new AS n ON n.id = o.id
    WHERE o.hash IS DISTINCT FROM n.hash
)
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
                                                       nr.address_station, nr.address_channel) END
            ELSE CASE WHEN orr.allocated THEN concat_ws('.', orr.address_network,
                                                       orr.address_station, orr.address_channel) END
       END AS address
FROM differ AS x
LEFT JOIN graph.origin_docs AS od ON od.pos = x.old_pos
LEFT JOIN graph_next.origin_docs AS nd ON nd.pos = x.new_pos
LEFT JOIN graph.origin_rows AS orr ON orr.pos = x.old_pos
LEFT JOIN graph_next.origin_rows AS nr ON nr.pos = x.new_pos
LEFT JOIN graph.origins AS oo ON x.new_pos IS NULL AND oo.id = x.id
LEFT JOIN graph_next.origins AS no ON no.id = x.id
CROSS JOIN LATERAL (
    SELECT CASE WHEN x.old_pos IS NOT NULL AND x.new_pos IS NOT NULL THEN od.doc::jsonb END AS bj,
           CASE WHEN x.old_pos IS NOT NULL AND x.new_pos IS NOT NULL THEN nd.doc::jsonb END AS aj
) AS j;
