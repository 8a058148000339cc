-- Returns the history of one origin (docs/api.md, An origin's history) up to the graph in schema
-- {graph}: one row per kept change set of a generation up to that graph's that names the origin,
-- newest first, or one row with null change columns when none does. Every row carries the graph's
-- stamp (generation, commit time, digest), the oldest since, and doc: the origin's record in that graph
-- (JSON text, null when absent there), and when the newest change set dropped up to it
-- was dropped (null: none). before and after are the records as the change set
-- stored them; change_log holds the kept change sets only (retention deletes a change set's
-- rows as it marks it dropped). Served by change_log's primary key (id, generation),
-- origin_rows_id_key and the primary key of origin_docs; the oldest since reads
-- registry_meta.generations, a row per generation.
SELECT i.generation,
       i.committed_at,
       i.digest,
       s.oldest_since,
       s.changes_dropped_at,
       (SELECT d.doc
        FROM {graph}.origin_rows AS r
        JOIN {graph}.origin_docs AS d ON d.pos = r.pos
        WHERE r.id = %(origin_uuid)s::uuid) AS doc,
       c.generation AS changed_in,
       c.before,
       c.after
-- graph_info has one row, which the planner cannot know without statistics (it guesses
-- hundreds, and multiplies the rest of the plan's cost by them): LIMIT 1 tells it.
FROM (SELECT generation, committed_at, digest FROM {graph}.graph_info LIMIT 1) AS i
-- The oldest since of the graph's generation, and when the change set that made it so was
-- dropped, the last moment this answer changed (null: none was): registry_meta.oldest_since_row,
-- inlined into this statement (a call of the scalar registry_meta.oldest_since would be
-- planned again at every execution, which cost more than the rest of this statement).
CROSS JOIN LATERAL (
    SELECT o.since AS oldest_since, o.dropped_at AS changes_dropped_at
    FROM registry_meta.oldest_since_row(i.generation) AS o
) AS s
LEFT JOIN LATERAL (
    SELECT l.generation, l.before, l.after
    FROM registry_meta.change_log AS l
    WHERE l.id = %(origin_uuid)s::uuid
      AND l.generation <= i.generation
) AS c ON true
ORDER BY c.generation DESC;
