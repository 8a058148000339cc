-- Copies the change set of the generation just numbered (graph_next.changes, docs/api.md, Changes
-- between generations) into registry_meta.change_log, where it outlives the generation's graph
-- (docs/api.md, Changes since any generation): the records before and after as the API answers
-- them, their hashes, the hashes of their four top-level blocks (origin, governance, bans,
-- presentations) and each side's name and address. Only the changes are decoded, never the graph; a
-- database's first change set (every origin added, which no net change compares) gets no block
-- hashes, so its cost is a copy.
INSERT INTO registry_meta.change_log
    (generation, id, kind, blocks, before, after, before_hash, after_hash, before_blocks,
     after_blocks, before_name, before_address, after_name, after_address)
SELECT i.generation, c.id, c.kind, c.blocks, c.before, d.doc,
       md5(c.before)::uuid, h.hash,
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
       CASE WHEN c.kind = 'removed' THEN c.name ELSE j.bj -> 'origin' ->> 'name' END,
       CASE WHEN c.kind = 'removed' THEN c.address ELSE j.bj -> 'bans' ->> 'address' END,
       CASE WHEN c.kind <> 'removed' THEN c.name END,
       CASE WHEN c.kind <> 'removed' THEN c.address END
FROM graph_next.graph_info AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation
CROSS JOIN graph_next.changes AS c
LEFT JOIN graph_next.origin_docs AS d ON d.pos = c.after_pos
LEFT JOIN graph_next.origin_doc_hashes AS h ON h.pos = c.after_pos
CROSS JOIN LATERAL (
    SELECT CASE WHEN g.previous IS NOT NULL THEN c.before::jsonb END AS bj,
           CASE WHEN g.previous IS NOT NULL THEN d.doc::jsonb END AS aj
) AS j;
-- change_log's statistics, with this change set in them, before its net changes are built
-- (build_net_changes.sql): from a small sample of the narrow columns (migration 005).
ANALYZE registry_meta.change_log;
