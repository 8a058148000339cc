-- Trigram indexes that serve search_origins.sql's LIKE on the folded name and registry id.
CREATE INDEX origin_rows_name_trgm_idx ON origin_rows USING gin (name_key public.gin_trgm_ops);
CREATE INDEX origin_rows_registry_trgm_idx
    ON origin_rows USING gin (registry_key public.gin_trgm_ops);
