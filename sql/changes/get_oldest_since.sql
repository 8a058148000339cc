-- Returns the oldest since of generation %(generation)s (docs/api.md, Changes since any
-- generation): the smallest m such that the change set of every generation after m, up to it, is
-- kept (registry_meta.oldest_since, sql/definitions/oldest_since.sql); NULL when no generation was
-- ever produced.
SELECT registry_meta.oldest_since(%(generation)s::bigint);
