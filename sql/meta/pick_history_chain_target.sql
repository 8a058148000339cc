-- Returns the id of the origin with the most changes in the kept change sets after the
-- oldest since of the live generation (the first by origin id among equals), or no row when
-- none changed: the origin whose history `python -m devtools.bench_since` asks for. Reads the
-- kept change sets by change_log_generation_id_idx; a benchmark's one-off.
SELECT 'svc:origin:' || l.id
FROM registry_meta.change_log AS l
JOIN graph.graph_info AS i ON l.generation <= i.generation
WHERE l.generation > registry_meta.oldest_since(i.generation)
GROUP BY l.id
ORDER BY count(*) DESC, l.id
LIMIT 1;
