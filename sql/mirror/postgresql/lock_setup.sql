-- Two mirrors creating the tables at once would collide on the catalog: one waits.
SELECT pg_advisory_xact_lock(hashtext('registry_mirror'));
