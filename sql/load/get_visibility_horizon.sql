-- Returns, right after a load's commit, the next transaction id not yet given out: every row
-- the load wrote (on either of its connections) is older. A snapshot whose xmin precedes it
-- may not see the load, and keeps VACUUM from marking the load's pages all-visible.
SELECT pg_snapshot_xmax(pg_current_snapshot())::text;
