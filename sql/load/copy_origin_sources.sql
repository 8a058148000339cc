-- Streams every assembled record, in position order, for rendering.
COPY (SELECT pos, doc FROM origin_sources ORDER BY pos) TO STDOUT;
