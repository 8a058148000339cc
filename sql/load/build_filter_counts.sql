-- Exact counts per flag combination, for the listing's total without counting rows at
-- request time: over all origins, per network and per station. They change only with a load.
CREATE TABLE combo_counts AS
SELECT combo, count(*)::bigint AS n FROM origin_rows GROUP BY combo;

CREATE TABLE network_combo_counts AS
SELECT network_id, combo, count(*)::bigint AS n
FROM origin_rows WHERE network_id IS NOT NULL GROUP BY network_id, combo;

CREATE TABLE station_combo_counts AS
SELECT address_station AS station, combo, count(*)::bigint AS n
FROM origin_rows WHERE allocated GROUP BY address_station, combo;

CREATE INDEX network_combo_counts_idx ON network_combo_counts (network_id) INCLUDE (combo, n);
CREATE INDEX station_combo_counts_idx ON station_combo_counts (station) INCLUDE (combo, n);

-- Counts per block of 4096 consecutive positions and flag combination: a deep page of a
-- flag-filtered listing starts its scan at the right block instead of at position 1.
CREATE TABLE block_combo_counts AS
SELECT (pos - 1) / 4096 AS block, combo, count(*)::bigint AS n
FROM origin_rows GROUP BY 1, 2;

CREATE INDEX block_combo_counts_idx ON block_combo_counts (combo, block) INCLUDE (n);
