-- One step at a time on the copy: a second mirror is told so instead of waiting.
SELECT pg_try_advisory_xact_lock(hashtext('registry_mirror'));
