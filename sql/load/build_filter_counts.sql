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

-- Exact counts for the listing's facets (contract 13), so that a facet is read, not counted
-- at request time. A generation built before these were added has none of them: the
-- service then counts its origin_rows instead (registry/database/facets.py; which one a
-- generation is, origins/facet_counts_exist.sql asks).
--
-- Per network (null: no network), station (null: unallocated) and flag combination: the
-- facets of a listing filtered by network or station, each read through its index.
CREATE TABLE facet_combo_counts AS
SELECT network_id,
       CASE WHEN allocated THEN address_station END AS station,
       combo,
       count(*)::bigint AS n
FROM origin_rows
GROUP BY 1, 2, 3;

CREATE INDEX facet_combo_counts_network_idx ON facet_combo_counts (network_id, station)
    INCLUDE (combo, n);
CREATE INDEX facet_combo_counts_station_idx ON facet_combo_counts (station)
    INCLUDE (network_id, combo, n);

-- Origins per network (null: no network) over the whole graph, in the order the network_id
-- facet ranks them: with no filter its top values are the first rows of this index.
CREATE TABLE network_facet_counts AS
SELECT network_id, count(*)::bigint AS n
FROM origin_rows
GROUP BY network_id;

CREATE INDEX network_facet_counts_rank_idx
    ON network_facet_counts (n DESC, network_id COLLATE "C" NULLS LAST);

-- The network_id facet under flag filters sums the networks of the admitted combinations
-- only, read through this index rather than the whole of network_combo_counts.
CREATE INDEX network_combo_counts_combo_idx ON network_combo_counts (combo)
    INCLUDE (network_id, n);

-- The facet tables' planner statistics, here rather than in analyze_graph_next.sql, so that
-- this file says all there is about them.
ANALYZE facet_combo_counts, network_facet_counts;
