-- Indexes the change set (build_changes.sql, build_first_changes.sql) for paging (docs/api.md,
-- Changes between generations: ordered by origin id, which as a uuid sorts as its text does): pos
-- over all changes, kind_pos within its kind, and change_blocks, one row per changed origin and
-- block that differs, numbered within the block. A page of any filter is then a range of one index,
-- so the last page costs what the first does. The counts per kind and per block are kept in
-- change_counts (block '' for a kind's own count).
ALTER TABLE changes ADD PRIMARY KEY (pos);
CREATE UNIQUE INDEX changes_kind_idx ON changes (kind, kind_pos);
CREATE TABLE change_blocks AS
SELECT b.block,
       (row_number() OVER (PARTITION BY b.block ORDER BY c.id))::integer AS block_pos,
       c.pos
FROM changes AS c
CROSS JOIN LATERAL unnest(c.blocks) AS b(block);
ALTER TABLE change_blocks ADD PRIMARY KEY (block, block_pos);
CREATE TABLE change_counts AS
SELECT kind, '' AS block, count(*)::bigint AS n FROM changes GROUP BY kind
UNION ALL
SELECT 'changed', block, count(*)::bigint FROM change_blocks GROUP BY block;
-- Each change as the API sends it (docs/api.md, Changes between generations): line, the JSON object
-- of changes[] and of an NDJSON export, built from the stored records without decoding them;
-- csv_line, its CSV row (id, kind, blocks, name, address) written as Python's csv module writes it,
-- the name with the spreadsheet guard of build_origin_csv.sql. A view, so that every listing and
-- export reads one definition and the planner still walks the index each one needs.
CREATE VIEW change_lines AS
SELECT c.pos, c.kind, c.kind_pos, c.id,
       '{"id":"svc:origin:' || c.id::text || '","kind":"' || c.kind || '","blocks":'
           || array_to_json(c.blocks)::text || ',"before":' || coalesce(c.before, 'null')
           || ',"after":' || coalesce(d.doc, 'null') || '}' AS line,
       concat('svc:origin:' || c.id::text, ',', c.kind, ',', array_to_string(c.blocks, ';'), ',',
              CASE WHEN g.name ~ E'[",\r\n]'
                   THEN '"' || replace(g.name, '"', '""') || '"' ELSE g.name END, ',',
              c.address, E'\r\n') AS csv_line
FROM changes AS c
LEFT JOIN origin_docs AS d ON d.pos = c.after_pos
CROSS JOIN LATERAL (
    SELECT CASE WHEN left(c.name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                THEN '''' ELSE '' END || c.name AS name
) AS g;
