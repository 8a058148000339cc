-- One row describing the graph this schema holds: which code version built it, with which
-- load SQL (format: `make bench` reuses a loaded graph only when it matches), and when.
CREATE TABLE graph_info AS
SELECT %(schema_version)s::integer AS schema_version,
       %(format)s::text AS format,
       now() AS loaded_at,
       %(counts)s::jsonb AS counts;
