-- Waits at most this long for a lock in the current transaction.
SET LOCAL lock_timeout = '2s';
