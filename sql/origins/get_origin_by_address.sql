-- Returns one row: the stamp (generation, commit time, digest) of the graph in schema {graph}, and doc,
-- the record (JSON text, as OriginSchema dumped it at load time) of the origin holding
-- network.station.channel, null when none does.
-- Served by origin_rows_address_idx, then the primary key of origin_docs.
SELECT i.generation,
       i.committed_at,
       i.digest,
       (SELECT d.doc
        FROM {graph}.origin_rows AS r
        JOIN {graph}.origin_docs AS d ON d.pos = r.pos
        WHERE r.allocated
          AND r.address_network = %(network)s
          AND r.address_station = %(station)s
          AND r.address_channel = %(channel)s) AS doc
FROM {graph}.graph_info AS i;
