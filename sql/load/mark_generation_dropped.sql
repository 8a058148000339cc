-- Marks one generation dropped (its schema is dropped in the same transaction). The moment is
-- never before the newest commit time (which a quick series of loads can put ahead of the
-- clock: record_generation.sql), so that the generation list can tell a drop came after the
-- commit it answers from (GET /registry/generations, If-Modified-Since). A generation already
-- marked keeps its first moment.
UPDATE registry_meta.generations
SET dropped_at = greatest(now(), (SELECT max(g.committed_at) FROM registry_meta.generations AS g))
WHERE generation = %(generation)s AND dropped_at IS NULL;
