-- One row describing the graph this schema holds: which code version built it, with which
-- load SQL (format: `make bench` reuses a loaded graph only when it matches), when, its
-- digest (registry.digest, summed as its records were rendered), and (set by
-- load/record_generation at the swap) its generation and commit time.
CREATE TABLE graph_info AS
SELECT %(schema_version)s::integer AS schema_version,
       now() AS loaded_at,
       %(counts)s::jsonb AS counts,
       %(format)s::text AS format,
       NULL::bigint AS generation,
       NULL::timestamptz AS committed_at,
       %(digest)s::text AS digest;
