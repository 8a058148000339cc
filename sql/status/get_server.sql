-- Returns the server's version, the database and the user this session runs as (one row);
-- settings and session functions only, no table.
SELECT current_setting('server_version') AS server_version,
       current_database() AS database,
       current_user AS user_name;
