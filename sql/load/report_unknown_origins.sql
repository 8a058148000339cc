-- Returns (line, field, problem, total) for edges, allocations and carriages naming an
-- origin the document lacks.
SELECT line, 'origin_id' AS field,
       'no origin "svc:origin:' || origin_id || '" in the document' AS problem,
       count(*) OVER () AS total
FROM (SELECT source_line AS line, origin_id FROM governance_edges
      UNION ALL SELECT source_line, origin_id FROM allocations
      UNION ALL SELECT source_line, origin_id FROM carriages WHERE origin_id IS NOT NULL) AS refs
WHERE NOT EXISTS (SELECT FROM origins AS o WHERE o.id = refs.origin_id)
ORDER BY line
LIMIT %(limit)s;
