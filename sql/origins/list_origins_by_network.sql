-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, total,
-- returned and records (the page's records, one JSON array text in position order),
-- of one network, optionally narrowed by flag
-- combinations (combos null: any); no station filter (that is
-- list_origins_by_network_and_station.sql).
-- The total is summed from network_combo_counts (exact, built at load time, served by
-- network_combo_counts_idx); the page walks origin_rows_network_idx (network_id, pos) in
-- order and stops after offset + limit matches, so the largest network costs no more than a
-- small one.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT coalesce(sum(c.n), 0)
        FROM {graph}.network_combo_counts AS c
        WHERE c.network_id = %(network_id)s::text
          AND (%(combos)s::smallint[] IS NULL OR c.combo = ANY (%(combos)s::smallint[])))::bigint
           AS total,
       p.returned,
       p.records
FROM {graph}.graph_info AS i,
     LATERAL (SELECT count(*) AS returned,
                     '[' || coalesce(string_agg(d.doc, ',' ORDER BY d.pos), '') || ']'
                         AS records
              FROM (SELECT r.pos
                    FROM {graph}.origin_rows AS r
                    WHERE r.network_id = %(network_id)s::text
                      AND (%(combos)s::smallint[] IS NULL
                           OR r.combo = ANY (%(combos)s::smallint[]))
                    ORDER BY r.pos
                    LIMIT %(limit)s::integer OFFSET %(offset)s::bigint) AS page
              JOIN {graph}.origin_docs AS d ON d.pos = page.pos) AS p;
