-- Trigram indexes that serve search_origins.sql's LIKE on the folded name and registry id.
CREATE INDEX origin_search_name_trgm_idx
    ON origin_search USING gin (name_key public.gin_trgm_ops);
CREATE INDEX origin_search_registry_trgm_idx
    ON origin_search USING gin (registry_key public.gin_trgm_ops);
