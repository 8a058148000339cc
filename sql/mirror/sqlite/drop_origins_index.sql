-- An export writes every row: the id index goes first, and index_origins.sql builds it
-- again once the rows are in (create_tables.sql says why).
DROP INDEX IF EXISTS origins_by_id;
