-- How many of the copy's two tables the file holds (2: a copy may be in it).
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('origins', 'mirror');
