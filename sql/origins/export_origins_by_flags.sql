-- Returns the record (doc: JSON text) of every origin whose flag combination is one of combos
-- (governance, allocation, publication, transport and presentations filters), in listing
-- order. Served by origin_rows_pos_combo_idx (index-only, in position order), each match
-- joined to the primary key of origin_docs: the rows come in order, no sort, so the first
-- batch is ready as soon as its origins are found.
SELECT d.doc
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_docs AS d ON d.pos = r.pos
WHERE r.combo = ANY (%(combos)s::smallint[])
ORDER BY r.pos;
