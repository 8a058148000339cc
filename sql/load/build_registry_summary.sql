-- The platform-wide counts of GET /registry/summary, computed once per load (one row).
-- Carriage counts are null when no catalog is connected; transport_inventory[t] is null
-- when the catalog does not classify t.
CREATE TABLE registry_summary AS
WITH catalog_row AS (
    SELECT transports FROM catalog
), inventory AS (
    SELECT transport, count(*) AS n FROM carriages GROUP BY transport
), resolved AS (
    SELECT c.transport, count(*) AS n
    FROM carriages AS c
    JOIN origins AS o ON o.id = c.origin_id AND o.reviewed
    GROUP BY c.transport
), totals AS (
    SELECT (SELECT count(*) FROM carriages) AS carriages,
           (SELECT coalesce(sum(n), 0) FROM resolved) AS resolved,
           EXISTS (SELECT FROM catalog) AS connected
)
SELECT jsonb_build_object(
    'canonical_origins', (SELECT count(*) FROM origin_rows),
    'reviewed_origins', (SELECT count(*) FROM origins WHERE reviewed),
    'governed_origins', (SELECT count(*) FROM origin_rows WHERE governed),
    'eligible_unallocated', (SELECT count(*) FROM origin_rows WHERE governed AND NOT allocated),
    'bans_allocated', (SELECT count(*) FROM allocations),
    'published', (SELECT count(*) FROM allocations WHERE publication_status = 'published'),
    'held', (SELECT count(*) FROM allocations WHERE publication_status = 'held'),
    'catalog_carriages', CASE WHEN t.connected THEN t.carriages END,
    'resolved_carriages', CASE WHEN t.connected THEN t.resolved END,
    'unresolved_carriages', CASE WHEN t.connected THEN t.carriages - t.resolved END,
    'transport_inventory', (
        SELECT jsonb_object_agg(name,
                   CASE WHEN name = ANY ((SELECT transports FROM catalog_row)::text[])
                        THEN coalesce((SELECT n FROM inventory WHERE transport = name), 0) END)
        FROM unnest(ARRAY['iptv', 'ovp', 'ota', 'fast']) AS name),
    'resolved_presentations', (
        SELECT jsonb_object_agg(name, coalesce((SELECT n FROM resolved WHERE transport = name), 0))
        FROM unnest(ARRAY['iptv', 'ovp', 'ota', 'fast']) AS name)
) AS doc
FROM totals AS t;
