-- Returns (kind, term, n): every word of the folded origin names with the number of names
-- holding it, and every registry id with the number of origins holding it; what
-- `make bench` draws its search mix from. A benchmark's set-up, not a request: one pass
-- over origin_search, no index needed.
SELECT 'word' AS kind, word AS term, count(*) AS n
FROM graph.origin_search AS s,
     regexp_split_to_table(s.name_key, '\s+') AS word
WHERE word <> ''
GROUP BY word
UNION ALL
SELECT 'registry_id', s.registry_key, count(*)
FROM graph.origin_search AS s
WHERE s.registry_key IS NOT NULL AND s.registry_key <> ''
GROUP BY s.registry_key
ORDER BY 1, 3 DESC, 2;
