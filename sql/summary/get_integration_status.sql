-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and feed,
-- the feed record's fields with the null ones left out (null when the graph has no feed
-- record). Reads the one-row tables {graph}.graph_info and {graph}.feed.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT jsonb_strip_nulls(to_jsonb(f) - 'only_row' - 'source_line')
        FROM {graph}.feed AS f) AS feed
FROM {graph}.graph_info AS i;
