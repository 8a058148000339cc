-- Returns (line, field, problem, total) for each repeated network id after its first line.
SELECT source_line AS line, 'id' AS field,
       'duplicate network id ' || to_json(id) || ' (first on line ' || first_line || ')' AS problem,
       count(*) OVER () AS total
FROM (SELECT id, source_line, min(source_line) OVER (PARTITION BY id) AS first_line
      FROM networks) AS ids
WHERE source_line > first_line
ORDER BY source_line
LIMIT %(limit)s;
