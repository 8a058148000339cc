-- Marks one generation dropped (its schema is dropped in the same transaction).
UPDATE registry_meta.generations SET dropped_at = now() WHERE generation = %(generation)s;
