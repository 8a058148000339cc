-- Ends the read-only transaction of one request (it changed nothing). No table, no index.
COMMIT;
