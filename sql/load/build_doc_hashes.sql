-- Each stored record's content hash (docs/api.md, Changes between generations "different as the API
-- answers"): the md5 of its JSON text as every answer sends it, as a uuid (16 bytes), keyed by pos
-- like origin_docs. Built right after the records are copied in, on the connection that copied
-- them: for a large graph that is the load's second connection, beside the index builds
-- (registry.loader.beside). Kept with the generation, so that the next load hashes only its
-- own records (build_changes.sql).
CREATE TABLE origin_doc_hashes AS
SELECT pos, md5(doc)::uuid AS hash FROM origin_docs;
