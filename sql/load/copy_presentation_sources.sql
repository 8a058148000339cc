-- Every presentation (each carriage of a reviewed origin), streamed to the loader in the order
-- of its origin's position, then of carriage_id in plain code-point order (COLLATE "C"), the
-- order of an Origin's presentations. Columns: pos, carriage_id, transport, provider, source,
-- availability.
COPY (
    SELECT r.pos, c.id, c.transport, c.provider, c.source, c.availability
    FROM carriages AS c
    JOIN origins AS o ON o.id = c.origin_id AND o.reviewed
    JOIN origin_rows AS r ON r.id = o.id
    ORDER BY r.pos, c.id COLLATE "C"
) TO STDOUT;
