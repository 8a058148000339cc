-- Returns every record of the graph in schema {schema}, as the API sends it (origin_docs, in
-- position order), for registry.database.digests to compute a digest from.
SELECT doc FROM {schema}.origin_docs ORDER BY pos;
