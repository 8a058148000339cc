-- Each origin's whole record (the spec's Origin), assembled once per load and streamed in
-- position order to the loader, which renders each through OriginSchema into origin_docs
-- (registry/loader/rendering.py). It is never stored: a table of it would be written, read
-- back and sorted only to be dropped.
-- Presentations are ordered by carriage_id in plain code-point order (COLLATE "C").
-- held.at is RFC 3339 in UTC, with fractional seconds only when there are any.
COPY (
    WITH presentations AS (
        SELECT c.origin_id,
               json_agg(json_build_object('carriage_id', c.id, 'transport', c.transport,
                                            'provider', c.provider, 'source', c.source,
                                            'availability', c.availability)
                         ORDER BY c.id COLLATE "C") AS items
        FROM carriages AS c
        JOIN origins AS o ON o.id = c.origin_id AND o.reviewed
        GROUP BY c.origin_id
    )
    SELECT r.pos,
           json_build_object(
               'origin', json_build_object(
                   'id', 'svc:origin:' || o.id,
                   'name', o.name,
                   'registry_id', o.registry_id,
                   'network', json_build_object('id', o.network_id, 'name', n.name)),
               'governance', json_build_object(
                   'state', CASE WHEN r.governed THEN 'governed' ELSE 'ungoverned' END,
                   'active_edges', r.active_edges),
               'bans', CASE WHEN a.origin_id IS NULL THEN
                   json_build_object('allocated', false, 'address', null, 'network', null,
                                      'station', null, 'channel', null,
                                      'publication_status', null, 'held', null)
               ELSE
                   json_build_object(
                       'allocated', true,
                       'address', concat_ws('.', a.network, a.station, a.channel),
                       'network', a.network,
                       'station', a.station,
                       'channel', a.channel,
                       'publication_status', a.publication_status,
                       'held', CASE WHEN a.publication_status = 'held' THEN json_build_object(
                           'at', to_char(a.held_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                                 || CASE WHEN date_trunc('second', a.held_at) = a.held_at THEN ''
                                         ELSE to_char(a.held_at AT TIME ZONE 'UTC', '.US') END
                                 || 'Z',
                           'reason', a.held_reason) END)
               END,
               'presentations', coalesce(p.items, '[]'::json)) AS doc
    FROM origin_rows AS r
    JOIN origins AS o ON o.id = r.id
    LEFT JOIN networks AS n ON n.id = o.network_id
    LEFT JOIN allocations AS a ON a.origin_id = o.id
    LEFT JOIN presentations AS p ON p.origin_id = o.id
    ORDER BY r.pos
) TO STDOUT;
