-- The read model's narrow table: one row per origin with its place in listing order
-- (pos: by allocated address as numbers, unallocated last, ties by origin id) and every
-- flag the listing filters on. transports is a bit set of the transports the origin has a
-- resolved presentation on (iptv 1, ovp 2, ota 4, fast 8); 0 means no presentation.
-- presentations counts them (the record's presentations: every carriage of a reviewed origin).
-- The carriages are counted per origin first and reviewed is applied per origin afterwards,
-- not by joining 5 million carriages to their origins: a parallel plan computes this
-- aggregate once in every participant, so the join was paid three times over.
-- combo packs every flag filter into one small integer (matching_combos of
-- registry/database/repository.py reads it): governed 1, allocated 2, published 4, held 8,
-- transports shifted left by 4 (in parentheses: PostgreSQL gives | and << the same
-- precedence).
CREATE TABLE origin_rows AS
WITH edge_counts AS (
    SELECT origin_id, (count(*) FILTER (WHERE active))::integer AS active_edges
    FROM governance_edges
    GROUP BY origin_id
), resolved AS (
    SELECT origin_id,
           bit_or(CASE transport WHEN 'iptv' THEN 1 WHEN 'ovp' THEN 2
                                 WHEN 'ota' THEN 4 WHEN 'fast' THEN 8 END)::smallint AS transports,
           count(*)::integer AS presentations
    FROM carriages
    WHERE origin_id IS NOT NULL
    GROUP BY origin_id
)
SELECT (row_number() OVER (ORDER BY a.origin_id IS NULL, a.network, a.station, a.channel, o.id))::integer
           AS pos,
       o.id,
       coalesce(e.active_edges, 0) AS active_edges,
       coalesce(e.active_edges, 0) > 0 AS governed,
       a.origin_id IS NOT NULL AS allocated,
       a.publication_status,
       a.network AS address_network,
       a.station AS address_station,
       a.channel AS address_channel,
       CASE WHEN o.reviewed THEN coalesce(r.transports, 0) ELSE 0 END::smallint AS transports,
       CASE WHEN o.reviewed THEN coalesce(r.presentations, 0) ELSE 0 END AS presentations,
       (CASE WHEN coalesce(e.active_edges, 0) > 0 THEN 1 ELSE 0 END
        | CASE WHEN a.origin_id IS NOT NULL THEN 2 ELSE 0 END
        | CASE a.publication_status WHEN 'published' THEN 4 WHEN 'held' THEN 8 ELSE 0 END
        | (CASE WHEN o.reviewed THEN coalesce(r.transports, 0) ELSE 0 END << 4))::smallint AS combo,
       o.network_id,
       o.name_key,
       o.registry_key
FROM origins AS o
LEFT JOIN edge_counts AS e ON e.origin_id = o.id
LEFT JOIN allocations AS a ON a.origin_id = o.id
LEFT JOIN resolved AS r ON r.origin_id = o.id;

-- Each network's number, in network id order (plain string order, as the network_id facet
-- breaks ties): origin_search keeps the 4-byte number, not the id (about 50 bytes), and
-- ranking networks by number is ranking them by id.
CREATE TABLE network_numbers AS
SELECT (row_number() OVER (ORDER BY id COLLATE "C"))::integer AS number, id
FROM networks;

-- What search reads: the folded name and registry id by position, so a search that must
-- look at many origins reads a third of the pages origin_rows would take; and beside them
-- what a search's facets group by (count_facets_of_search.sql: the allocation's station,
-- the network's number, the flag combination), so counting them reads the same pages and
-- looks nothing up in origin_rows per match. The fixed-width columns first: no padding.
-- Every network_id names a network (load/add_origin_network_reference.sql), so only an
-- origin without one has no number.
CREATE TABLE origin_search AS
SELECT r.pos,
       CASE WHEN r.allocated THEN r.address_station END AS station,
       k.number AS network,
       r.combo,
       r.name_key,
       r.registry_key
FROM origin_rows AS r
LEFT JOIN network_numbers AS k ON k.id = r.network_id;
