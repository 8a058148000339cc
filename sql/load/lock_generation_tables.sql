-- Takes every table of a retired generation ({tables}) at once or not at all (NOWAIT): a
-- drop that waited table by table would queue pinned readers behind it, and a reader holding
-- one table while waiting for another would deadlock with it. With every table held, the
-- DROP that follows waits for nobody and nobody holds anything it needs.
LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE NOWAIT;
