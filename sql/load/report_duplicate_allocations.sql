-- Returns (line, field, problem, total) for each second allocation of an origin.
SELECT source_line AS line, 'origin_id' AS field,
       'origin "svc:origin:' || origin_id || '" already has an allocation (line '
           || first_line || ')'AS problem,
       count(*) OVER () AS total
FROM (SELECT origin_id, source_line, min(source_line) OVER (PARTITION BY origin_id) AS first_line
      FROM allocations) AS allocated
WHERE source_line > first_line
ORDER BY source_line
LIMIT %(limit)s;
