-- The live graph's origin hashes (build_origin_hashes.sql), for a live graph loaded before
-- they were kept: built once, inside the load's transaction, in the live schema (readers do
-- not read them; a load that fails takes the table back with it).
CREATE TABLE IF NOT EXISTS graph.origin_hashes AS
SELECT r.id, r.pos, md5(d.doc)::uuid AS hash
FROM graph.origin_rows AS r
JOIN graph.origin_docs AS d ON d.pos = r.pos;
