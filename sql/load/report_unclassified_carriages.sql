-- Returns (line, field, problem, total) for carriages the catalog cannot hold: any carriage
-- when there is no catalog record, else one whose transport the catalog does not classify.
-- The catalog (one row or none) is read once, as a value: joined as a table, its row count
-- is unknown to the planner, which then sorted every carriage before filtering any.
WITH cat AS (SELECT (SELECT transports FROM catalog) AS transports)
SELECT c.source_line AS line,
       CASE WHEN cat.transports IS NULL THEN 'type' ELSE 'transport' END AS field,
       CASE WHEN cat.transports IS NULL
            THEN 'a carriage needs a catalog record, and the document has none'
            ELSE to_json(c.transport) || ' is not among the catalog''s transports ('
                 || array_to_string(cat.transports, ', ') || ')'
       END AS problem,
       count(*) OVER () AS total
FROM carriages AS c, cat
WHERE cat.transports IS NULL
   OR (c.transport IS NOT NULL AND NOT c.transport = ANY (cat.transports))
ORDER BY c.source_line
LIMIT %(limit)s;
