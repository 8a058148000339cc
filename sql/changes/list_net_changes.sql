-- Returns one row for since %(since)s (docs/api.md, Changes since any generation): the stamp
-- (generation, commit time, digest) of the graph in schema {graph} (n), whether since was ever
-- produced, the oldest since of n, the newest generation, the total of the net changes from since
-- to n (net_counts, counted by the load), the page (offset+1 .. offset+limit by origin id: one JSON
-- array text), n's previous and the net counts.
-- The page's rows come from one of three branches, the other two cut off by their one-time
-- filters: since n's oldest since, the rows numbered offset+1 .. offset+limit, a range of
-- net_changes_pos_idx (migration 006), so that every page costs what the first does; since
-- n - 1, the rows with until = n, a range of net_changes_until_idx (migration 005); any
-- other since, the planner's pick, such as net_changes' primary key filtered on the since.
-- Each of the last two yields its first offset+limit rows in id order, merged without a
-- sort, so the last page of since n - 1 walks its own rows only, not all of n's. The
-- oldest since is written out (a call of registry_meta.oldest_since is planned again at
-- each use) and kept apart (OFFSET 0) so that it is computed once.
-- Each row of the page then finds its records by change_log's primary key (id, generation):
-- the version's at until, and the record at n at last, the same row when until = last (an
-- origin changed once since), read once (net_change_json, migration 004). The lookups are
-- subqueries kept apart (OFFSET 0), so each is an index lookup on both key columns: joined,
-- the planner looks the record at n up by id alone and filters every kept version.
-- graph_info has one row; LIMIT 1 says so to the planner, which otherwise guesses hundreds
-- (the table has no statistics), multiplies the page's cost by them and compiles the
-- statement with JIT on every request (half a second at 100,000 origins).
SELECT i.generation,
       i.committed_at,
       i.digest,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       o.since AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(c.added + c.removed + c.changed, 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, c.added, c.removed, c.changed
FROM (SELECT generation, committed_at, digest FROM {graph}.graph_info LIMIT 1) AS i
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT max(s.generation) FROM registry_meta.generations AS s
                     WHERE s.generation <= i.generation AND s.changes_dropped_at IS NOT NULL),
                    (SELECT min(s.generation) FROM registry_meta.generations AS s)) AS since
    OFFSET 0
) AS o
JOIN registry_meta.generations AS g ON g.generation = i.generation
LEFT JOIN registry_meta.net_counts AS c
    ON c.generation = i.generation AND c.since = %(since)s::bigint
CROSS JOIN LATERAL (
    SELECT count(*) AS returned,
           '[' || coalesce(string_agg(
               registry_meta.net_change_json(
                   q.id, q.kind, q.blocks, b.before,
                   CASE WHEN q.last = q.until THEN b.after ELSE a.after END),
               ',' ORDER BY q.id), '') || ']' AS records
    FROM ((SELECT x.id, x.until, x.last, x.kind, x.blocks
           FROM registry_meta.net_changes AS x
           WHERE x.generation = i.generation AND x.pos > %(offset)s::bigint
             AND x.pos <= %(offset)s::bigint + %(limit)s::integer
             AND %(since)s::bigint = o.since)
          UNION ALL
          (SELECT r.id, r.until, r.last, r.kind, r.blocks
           FROM ((SELECT x.id, x.until, x.last, x.kind, x.blocks
                  FROM registry_meta.net_changes AS x
                  WHERE x.generation = i.generation AND x.until = i.generation
                    AND %(since)s::bigint = i.generation - 1 AND %(since)s::bigint <> o.since
                  ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
                 UNION ALL
                 (SELECT x.id, x.until, x.last, x.kind, x.blocks
                  FROM registry_meta.net_changes AS x
                  WHERE x.generation = i.generation
                    AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
                    AND %(since)s::bigint <> o.since AND %(since)s::bigint <> i.generation - 1
                  ORDER BY x.id LIMIT %(offset)s::bigint + %(limit)s::integer)
                 ORDER BY id
                 OFFSET %(offset)s::bigint LIMIT %(limit)s::integer) AS r)) AS q
    CROSS JOIN LATERAL (
        SELECT v.before, v.after
        FROM registry_meta.change_log AS v
        WHERE v.id = q.id AND v.generation = q.until
        OFFSET 0) AS b
    LEFT JOIN LATERAL (
        SELECT z.after
        FROM registry_meta.change_log AS z
        WHERE z.id = q.id AND z.generation = q.last AND q.last <> q.until
        OFFSET 0) AS a ON true
) AS p;
