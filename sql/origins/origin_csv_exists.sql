-- Returns whether the graph in schema `schema` has its CSV rows (origin_csv), one row: a graph
-- loaded before load/build_origin_csv.sql existed has not, and its CSV export is written from
-- the stored records instead. One catalog lookup.
SELECT to_regclass(format('%%I.origin_csv', %(schema)s::text)) IS NOT NULL AS present;
