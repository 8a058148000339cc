-- Returns the feed record's fields with the null ones left out (feed), or no row when the
-- graph has no feed record. Reads the one-row table graph.feed.
SELECT jsonb_strip_nulls(to_jsonb(f) - 'only_row' - 'source_line') AS feed
FROM graph.feed AS f;
