-- Returns the history of one origin (contract 12) up to the graph in schema {graph}: one row
-- per kept change set of a generation up to that graph's that names the origin, newest first,
-- or one row with null change columns when none does. Every row carries the graph's
-- generation and commit time, the oldest since, and doc: the origin's record in that graph
-- (JSON text, null when absent there). before and after are the records as the change set
-- stored them; change_log holds the kept change sets only (retention deletes a change set's
-- rows as it marks it dropped). Served by change_log's primary key (id, generation),
-- origin_rows_id_key and the primary key of origin_docs; the oldest since reads
-- registry_meta.generations, a row per generation.
SELECT i.generation,
       i.committed_at,
       s.oldest_since,
       (SELECT d.doc
        FROM {graph}.origin_rows AS r
        JOIN {graph}.origin_docs AS d ON d.pos = r.pos
        WHERE r.id = %(origin_uuid)s::uuid) AS doc,
       c.generation AS changed_in,
       c.before,
       c.after
FROM {graph}.graph_info AS i
-- registry_meta.oldest_since(i.generation) written out: a call of that SQL function is
-- planned again at every execution, which cost more than the rest of this statement.
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT max(g.generation) FROM registry_meta.generations AS g
                     WHERE g.generation <= i.generation AND g.changes_dropped_at IS NOT NULL),
                    (SELECT min(g.generation) FROM registry_meta.generations AS g))
           AS oldest_since
) AS s
LEFT JOIN LATERAL (
    SELECT l.generation, l.before, l.after
    FROM registry_meta.change_log AS l
    WHERE l.id = %(origin_uuid)s::uuid
      AND l.generation <= i.generation
) AS c ON true
ORDER BY c.generation DESC;
