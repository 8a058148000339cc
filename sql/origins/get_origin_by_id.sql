-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and doc,
-- the record (JSON text, as OriginSchema dumped it at load time) of the origin with this
-- uuid, null when there is none.
-- Served by origin_rows_id_key, then the primary key of origin_docs.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT d.doc
        FROM {graph}.origin_rows AS r
        JOIN {graph}.origin_docs AS d ON d.pos = r.pos
        WHERE r.id = %(origin_uuid)s::uuid) AS doc
FROM {graph}.graph_info AS i;
