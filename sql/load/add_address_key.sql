-- An address (network.station.channel) is allocated at most once; the index also serves
-- GET /registry/addresses/{address}.
ALTER TABLE allocations ADD CONSTRAINT allocations_address_key UNIQUE (network, station, channel);
