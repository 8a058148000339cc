-- The records held for a batch of ids, given as one JSON array (one parameter, whatever the
-- batch's size, under SQLite's limit on parameters).
SELECT id, record FROM origins WHERE id IN (SELECT value FROM json_each(?));
