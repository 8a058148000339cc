DELETE FROM origins WHERE id IN (SELECT value FROM json_each(?));
