-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, total,
-- returned and records (the page's records, one JSON array text in position order), for filters on
-- governance, allocation, publication, transport and presentations only. Those filters are
-- a set of flag combinations (combos); the total is summed from combo_counts, and the page
-- scan starts in the block of 4096 positions that holds the first origin of the page
-- (block_combo_counts), walking origin_rows_pos_combo_idx from there (index-only).
WITH blocks AS (
    SELECT block, sum(n) AS n
    FROM {graph}.block_combo_counts
    WHERE combo = ANY (%(combos)s::smallint[])
    GROUP BY block
), before_each AS (
    SELECT block, sum(n) OVER (ORDER BY block) - n AS before
    FROM blocks
), start AS (
    SELECT block, before
    FROM before_each
    WHERE before <= %(offset)s::bigint
    ORDER BY block DESC
    LIMIT 1
), page AS (
    SELECT r.pos
    FROM {graph}.origin_rows AS r
    WHERE r.pos > (SELECT block FROM start) * 4096
      AND r.combo = ANY (%(combos)s::smallint[])
    ORDER BY r.pos
    LIMIT %(limit)s::integer OFFSET %(offset)s::bigint - (SELECT before FROM start)
)
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT coalesce(sum(n), 0) FROM {graph}.combo_counts
        WHERE combo = ANY (%(combos)s::smallint[]))::bigint AS total,
       p.returned,
       p.records
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM page JOIN {graph}.origin_docs AS d ON d.pos = page.pos) AS p;
