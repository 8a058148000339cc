-- Records the digest of the graph in schema {schema}, generation %(generation)s, in its
-- graph_info and in registry_meta.generations (registry.database.digests).
WITH listed AS (
    UPDATE registry_meta.generations SET digest = %(digest)s::text
    WHERE generation = %(generation)s::bigint
)
UPDATE {schema}.graph_info SET digest = %(digest)s::text;
