-- Returns the newest applied migration and the version the live graph was built with
-- (null when the database has never been set up).
SELECT
    (SELECT max(version) FROM registry_meta.schema_migrations) AS migrations_version,
    (SELECT schema_version FROM graph.graph_info) AS graph_version,
    (SELECT loaded_at FROM graph.graph_info) AS loaded_at;
