-- Returns how far (seconds) this server's replay is behind the WAL it has received: 0 on a
-- primary and on a standby that has replayed all it received, else the age of the last
-- transaction it replayed (replay paused or slow). No table, no index.
SELECT CASE
         WHEN NOT pg_is_in_recovery() THEN 0
         WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
         ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8 AS lag_s;
