-- The live graph's record hashes (build_doc_hashes.sql), for a live graph loaded before they
-- were kept: built once, inside the load's transaction, in the live schema (readers do not
-- read them; a load that fails takes the table back with it).
CREATE TABLE IF NOT EXISTS graph.origin_doc_hashes AS
SELECT pos, md5(doc)::uuid AS hash FROM graph.origin_docs;
