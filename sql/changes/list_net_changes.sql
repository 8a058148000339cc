-- Returns one row for since %(since)s (contract 12): the generation and commit time of the
-- graph in schema {graph} (n), whether since was ever produced, the oldest since of n, the
-- newest generation, the total of the net changes from since to n (net_counts, counted by
-- the load), the page (offset+1 .. offset+limit by origin id: one JSON array text), n's
-- previous and the net counts. The page is a range of net_changes' primary key
-- (generation, id, until), read index-only and filtered on since; then each of its rows
-- finds its two records by change_log's primary key (net_change_json, migration 004).
-- graph_info has one row; LIMIT 1 says so to the planner, which otherwise guesses hundreds
-- (the table has no statistics), multiplies the page's cost by them and compiles the
-- statement with JIT on every request (half a second at 100,000 origins).
SELECT i.generation,
       i.committed_at,
       EXISTS (SELECT FROM registry_meta.generations AS s
               WHERE s.generation = %(since)s::bigint) AS produced,
       registry_meta.oldest_since(i.generation) AS oldest_since,
       (SELECT max(s.generation) FROM registry_meta.generations AS s) AS current,
       coalesce(c.added + c.removed + c.changed, 0)::bigint AS total,
       p.returned,
       p.records,
       g.previous, c.added, c.removed, c.changed
FROM (SELECT generation, committed_at FROM {graph}.graph_info LIMIT 1) AS i
JOIN registry_meta.generations AS g ON g.generation = i.generation
LEFT JOIN registry_meta.net_counts AS c
    ON c.generation = i.generation AND c.since = %(since)s::bigint
CROSS JOIN LATERAL (
    SELECT count(*) AS returned,
           '[' || coalesce(string_agg(
               registry_meta.net_change_json(q.id, q.kind, q.blocks, b.before, a.after),
               ',' ORDER BY q.id), '') || ']' AS records
    FROM (SELECT x.id, x.until, x.last, x.kind, x.blocks
          FROM registry_meta.net_changes AS x
          WHERE x.generation = i.generation
            AND x.lo <= %(since)s::bigint AND %(since)s::bigint < x.until
          ORDER BY x.id
          OFFSET %(offset)s::bigint LIMIT %(limit)s::integer) AS q
    JOIN registry_meta.change_log AS b ON b.id = q.id AND b.generation = q.until
    JOIN registry_meta.change_log AS a ON a.id = q.id AND a.generation = q.last
) AS p;
