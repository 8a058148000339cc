-- Returns the first ids of each kind of change in graph_next (by origin id), at most
-- %(first)s of each, for a dry run's report.
SELECT kind, 'svc:origin:' || id::text AS id
FROM graph_next.changes
WHERE kind_pos <= %(first)s
ORDER BY kind, kind_pos;
