-- Returns what still holds the visibility horizon of this database behind %(horizon)s (from
-- get_visibility_horizon.sql), one line each: sessions of this database whose snapshot or
-- transaction is older (an export's, say), WAL senders (a standby's hot_standby_feedback
-- holds every database), replication slots and prepared transactions. While any is left,
-- VACUUM cannot mark the pages of the load that took the horizon all-visible.
WITH horizon AS (SELECT age(%(horizon)s::xid8::xid) AS age)
SELECT format('session %%s (%%s)', a.pid,
              concat_ws(', ', nullif(a.application_name, ''), a.usename, a.backend_type))
FROM pg_stat_activity AS a, horizon
WHERE a.pid <> pg_backend_pid()
  AND (a.datname = current_database() OR a.datid IS NULL)
  AND greatest(age(a.backend_xmin), age(a.backend_xid)) > horizon.age
UNION ALL
SELECT format('replication slot %%s', s.slot_name)
FROM pg_replication_slots AS s, horizon
WHERE age(s.xmin) > horizon.age
UNION ALL
SELECT format('prepared transaction %%s', p.gid)
FROM pg_prepared_xacts AS p, horizon
WHERE p.database = current_database() AND age(p.transaction) > horizon.age;
