-- The platform-wide counts of GET /registry/summary, computed once per load (one row).
-- Carriage counts are null when no catalog is connected; transport_inventory[t] is null
-- when the catalog does not classify t.
-- One pass over the carriages gives every carriage count (the references are checked by now,
-- so a carriage's origin_id names an origin or is null), and one over origin_rows every origin
-- and allocation count (an allocation is an allocated origin's row, one each).
CREATE TABLE registry_summary AS
WITH per_transport AS (
    SELECT c.transport, count(*) AS n, count(*) FILTER (WHERE o.reviewed) AS resolved
    FROM carriages AS c
    LEFT JOIN origins AS o ON o.id = c.origin_id
    GROUP BY c.transport
), origin_counts AS (
    SELECT count(*) AS canonical,
           count(*) FILTER (WHERE governed) AS governed,
           count(*) FILTER (WHERE governed AND NOT allocated) AS eligible_unallocated,
           count(*) FILTER (WHERE allocated) AS allocated,
           count(*) FILTER (WHERE publication_status = 'published') AS published,
           count(*) FILTER (WHERE publication_status = 'held') AS held
    FROM origin_rows
), totals AS (
    SELECT (SELECT coalesce(sum(n), 0) FROM per_transport) AS carriages,
           (SELECT coalesce(sum(resolved), 0) FROM per_transport) AS resolved,
           EXISTS (SELECT FROM catalog) AS connected
)
SELECT jsonb_build_object(
    'canonical_origins', oc.canonical,
    'reviewed_origins', (SELECT count(*) FROM origins WHERE reviewed),
    'governed_origins', oc.governed,
    'eligible_unallocated', oc.eligible_unallocated,
    'bans_allocated', oc.allocated,
    'published', oc.published,
    'held', oc.held,
    'catalog_carriages', CASE WHEN t.connected THEN t.carriages END,
    'resolved_carriages', CASE WHEN t.connected THEN t.resolved END,
    'unresolved_carriages', CASE WHEN t.connected THEN t.carriages - t.resolved END,
    'transport_inventory', (
        SELECT jsonb_object_agg(name,
                   CASE WHEN name = ANY ((SELECT transports FROM catalog)::text[])
                        THEN coalesce((SELECT n FROM per_transport WHERE transport = name), 0) END)
        FROM unnest(ARRAY['iptv', 'ovp', 'ota', 'fast']) AS name),
    'resolved_presentations', (
        SELECT jsonb_object_agg(name, coalesce((SELECT resolved FROM per_transport WHERE transport = name), 0))
        FROM unnest(ARRAY['iptv', 'ovp', 'ota', 'fast']) AS name)
) AS doc
FROM totals AS t, origin_counts AS oc;
