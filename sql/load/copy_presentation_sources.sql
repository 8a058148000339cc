-- Every presentation (each carriage of a reviewed origin), streamed to the loader in the order
-- of its origin's position, then of carriage_id in plain code-point order (COLLATE "C"), the
-- order of an Origin's presentations. Columns: pos, carriage_id, transport, provider, source,
-- availability. origin_rows counts an origin's presentations only when it is reviewed, so
-- presentations > 0 picks the reviewed origins that have any, without joining origins.
COPY (
    SELECT r.pos, c.id, c.transport, c.provider, c.source, c.availability
    FROM carriages AS c
    JOIN origin_rows AS r ON r.id = c.origin_id AND r.presentations > 0
    ORDER BY r.pos, c.id COLLATE "C"
) TO STDOUT;
