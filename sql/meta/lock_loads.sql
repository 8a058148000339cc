-- Serialises loads and migrations: one at a time per database (held to the transaction's end).
SELECT pg_advisory_xact_lock(7312049216);
