-- Returns (line, field, problem, total) for origins naming a network the document lacks.
SELECT o.source_line AS line, 'network_id' AS field,
       'no network ' || to_json(o.network_id) || ' in the document' AS problem,
       count(*) OVER () AS total
FROM origins AS o
WHERE o.network_id IS NOT NULL
  AND NOT EXISTS (SELECT FROM networks AS n WHERE n.id = o.network_id)
ORDER BY o.source_line
LIMIT %(limit)s;
