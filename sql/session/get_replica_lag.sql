-- Returns how far (seconds) this server's replay is behind the WAL it has received: 0 on a
-- primary and on a standby that has replayed all it received, else the age of the last
-- transaction it replayed (replay paused or slow). No table, no index.
-- Received only up to where replay stands, or before it, is not behind: a standby that
-- restarts reports as received the start of the WAL segment its streaming resumes from,
-- behind what it replayed from its own files, until the primary sends something new; an idle
-- primary may send nothing for hours, and that standby is as current as it can be.
SELECT CASE
         WHEN NOT pg_is_in_recovery() THEN 0
         WHEN pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
         ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8 AS lag_s;
