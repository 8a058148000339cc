-- Trigram matching for `search`, where the server ships pg_trgm (a trusted extension, so the
-- database owner may create it). Kept in public so that a graph swap never drops it.
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
