-- Each origin's fields, flat, streamed in position order to the loader, whose render workers
-- assemble each record (the Origin record) in Python, with its presentations
-- (copy_presentation_sources.sql), and dump it through OriginSchema into origin_docs
-- (registry/loader/rendering.py). Building the JSON here was one core's work for most of a
-- large load; the workers share it out over every core.
-- Columns: pos, id, name, registry_id, network_id, network_name, governed, active_edges,
-- allocated, network, station, channel, publication_status, held_at, held_reason.
-- held_at is RFC 3339 in UTC, with fractional seconds only when there are any, and given only
-- for a held allocation (the record's `held` is null otherwise).
COPY (
    SELECT r.pos,
           'svc:origin:' || o.id,
           o.name,
           o.registry_id,
           o.network_id,
           n.name,
           r.governed,
           r.active_edges,
           a.origin_id IS NOT NULL,
           a.network,
           a.station,
           a.channel,
           a.publication_status,
           CASE WHEN a.publication_status = 'held' THEN
               to_char(a.held_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
               || CASE WHEN date_trunc('second', a.held_at) = a.held_at THEN ''
                       ELSE to_char(a.held_at AT TIME ZONE 'UTC', '.US') END
               || 'Z'
           END,
           a.held_reason
    FROM origin_rows AS r
    JOIN origins AS o ON o.id = r.id
    LEFT JOIN networks AS n ON n.id = o.network_id
    LEFT JOIN allocations AS a ON a.origin_id = o.id
    ORDER BY r.pos
) TO STDOUT;
