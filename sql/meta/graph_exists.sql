-- Returns whether the live graph schema exists.
SELECT to_regnamespace('graph') IS NOT NULL AS present;
