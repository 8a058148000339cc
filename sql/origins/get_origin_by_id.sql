-- Returns the record (doc: JSON text, as OriginSchema dumped it at load time) of the
-- origin with this uuid, or no row.
-- Served by origin_rows_id_key, then the primary key of origin_docs.
SELECT d.doc
FROM graph.origin_rows AS r
JOIN graph.origin_docs AS d ON d.pos = r.pos
WHERE r.id = %(origin_uuid)s::uuid;
