-- The staging schema and whatever is left in it.
DROP SCHEMA IF EXISTS {schema} CASCADE;
