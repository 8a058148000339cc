-- Returns the CSV row (line: text ending in CRLF) of every origin whose flag combination is
-- one of combos, in listing order: export_origins_by_flags.sql over origin_csv instead of
-- origin_docs. Served by origin_rows_pos_combo_idx (index-only, in position order), each
-- match joined to the primary key of origin_csv: no sort.
SELECT c.line
FROM {graph}.origin_rows AS r
JOIN {graph}.origin_csv AS c ON c.pos = r.pos
WHERE r.combo = ANY (%(combos)s::smallint[])
ORDER BY r.pos;
