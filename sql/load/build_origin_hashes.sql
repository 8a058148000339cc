-- Each origin's content hash in the graph being built: the md5 of its stored record (the
-- exact JSON every answer sends), kept as a uuid (16 bytes). The next load compares its own
-- with these instead of hashing this generation's records again (build_changes.sql). A live
-- graph loaded before origin_hashes existed gets its table here, once, from its records.
CREATE TABLE graph_next.origin_hashes AS
SELECT r.id, r.pos, md5(d.doc)::uuid AS hash
FROM graph_next.origin_rows AS r
JOIN graph_next.origin_docs AS d ON d.pos = r.pos;
