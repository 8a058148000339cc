-- Takes, without waiting, the lock that lets one `registry db vacuum` at a time finish the
-- read model of generation %(generation)s; held until the session ends. Returns whether taken.
SELECT pg_try_advisory_lock(73120492, %(generation)s::integer);
