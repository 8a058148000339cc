-- Returns the record (doc: JSON text) of every origin, in listing order. Read through a
-- server-side cursor in batches; served by the primary key of origin_docs, in order.
SELECT d.doc
FROM {graph}.origin_docs AS d
ORDER BY d.pos;
