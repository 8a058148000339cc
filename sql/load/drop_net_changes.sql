-- Deletes the net changes of generation %(generation)s, whose graph is dropped in the same
-- transaction (they answer since= only while that generation is kept).
WITH rows AS (
    DELETE FROM registry_meta.net_changes WHERE generation = %(generation)s::bigint
), buckets AS (
    DELETE FROM registry_meta.net_buckets WHERE generation = %(generation)s::bigint
)
DELETE FROM registry_meta.net_counts WHERE generation = %(generation)s::bigint;
