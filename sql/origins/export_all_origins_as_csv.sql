-- Returns the CSV row (line: text ending in CRLF, built at load by build_origin_csv.sql) of
-- every origin, in listing order. Read through a server-side cursor in batches; served by the
-- primary key of origin_csv, in order.
SELECT c.line
FROM {graph}.origin_csv AS c
ORDER BY c.pos;
