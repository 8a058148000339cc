-- Returns an origin id from the middle of the order, an address held there, the network with
-- the most origins, the origin count, the newest generation's change count and its previous: what `make bench` points its URLs at. The address
-- is the 1001st allocated one, or the middle one of a graph with fewer.
SELECT (SELECT 'svc:origin:' || id FROM graph.origin_rows
        WHERE pos = (SELECT greatest(1, count(*) / 2) FROM graph.origin_rows)) AS origin_id,
       (SELECT concat_ws('.', address_network, address_station, address_channel)
        FROM graph.origin_rows WHERE allocated ORDER BY pos
        OFFSET least(1000, (SELECT count(*) / 2 FROM graph.origin_rows WHERE allocated))
        LIMIT 1) AS address,
       (SELECT network_id FROM graph.network_combo_counts
        GROUP BY network_id ORDER BY sum(n) DESC LIMIT 1) AS network_id,
       (SELECT count(*) FROM graph.origin_rows) AS total,
       (SELECT count(*) FROM graph.changes) AS changes,
       (SELECT previous FROM registry_meta.generations
        WHERE generation = (SELECT generation FROM graph.graph_info)) AS previous;
