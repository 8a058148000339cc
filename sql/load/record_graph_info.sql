-- One row describing the graph this schema holds: which code version built it and when.
CREATE TABLE graph_info AS
SELECT %(schema_version)s::integer AS schema_version,
       now() AS loaded_at,
       %(counts)s::jsonb AS counts;
