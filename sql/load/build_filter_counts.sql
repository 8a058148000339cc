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

-- Exact counts for the listing's facets (docs/api.md, Facets and ids), so that a facet is read, not
-- counted at request time. A generation built before these were added has none of them: the
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

-- The network_id facet of a listing filtered on flags only (or not at all), ranked at load:
-- for every combination of flag filter values (`key`: governance_state, allocation_state,
-- publication_status, transport and has_presentations, each value or '' when not given,
-- joined by '|'; registry/database/facets.py flag_key writes the same), the first 101
-- networks (null: no network) by origins matching, as the facet ranks them. Summing the
-- networks' counts at request time would read a row per network and combination.
-- facet_keys lists every key with the flag combinations it admits (combos, as the listing's
-- filters admit them: facet_key_combos, written by the loader from the service's own
-- function, create_facet_key_combos.sql) and the `set` of those the graph holds, which
-- network_facet_tops is ranked by; a key this generation does not know (one written by a
-- later layout of the flags) is counted from origin_rows rather than read as no network.
CREATE TABLE facet_keys AS
WITH present AS (
    -- The combinations the graph holds among each key's: keys that admit the same ones
    -- (405 keys, 90 sets in the demo graph) share one ranking, set.
    SELECT k.key, k.combos,
           coalesce(array_agg(c.combo ORDER BY c.combo) FILTER (WHERE c.combo IS NOT NULL),
                    '{}') AS present
    FROM facet_key_combos AS k
    LEFT JOIN combo_counts AS c ON c.combo = ANY (k.combos)
    GROUP BY k.key, k.combos
)
SELECT key, combos, present, dense_rank() OVER (ORDER BY present)::integer AS set
FROM present;

ALTER TABLE facet_keys ADD PRIMARY KEY (key);
DROP TABLE facet_key_combos;

-- Ranked without summing every network in every set: at 1,000,000 origins (53,104 networks)
-- that was 4.8 million (set, network) sums to keep 90 x 101 rows. No network has more
-- origins in a set than in all (its total), so once 101 networks have at least L origins in
-- a set, a network whose total is below L has 101 others strictly ahead of it, whatever the
-- tie-break, and cannot be among the set's first 101. L is taken from the 101 networks with
-- the largest totals (any 101 networks would give a true bound; these give a high one), and
-- only the networks whose total reaches it are summed and ranked, exactly as before.
--
-- Networks by number (network_numbers: in id order, as the facet breaks ties), no network
-- as the number after the last: joins and ties need no null-safe comparisons, and it ranks
-- last among equal counts as null did. The ids are joined back at the end. Each row of a
-- network carries its total, so the index reads a combination's rows of the networks whose
-- total reaches a bound as one range; the table is dropped once ranked.
CREATE TABLE facet_network_combos AS
WITH per_network AS (
    SELECT k.number AS network, c.combo, c.n
    FROM network_combo_counts AS c
    JOIN network_numbers AS k ON k.id = c.network_id
    UNION ALL
    SELECT (SELECT coalesce(max(number), 0) + 1 FROM network_numbers), c.combo, sum(c.n)
    FROM facet_combo_counts AS c
    WHERE c.network_id IS NULL
    GROUP BY c.combo
)
SELECT network, combo, n::bigint AS n, (sum(n) OVER (PARTITION BY network))::bigint AS total
FROM per_network;

CREATE INDEX facet_network_combos_idx ON facet_network_combos (combo, total DESC)
    INCLUDE (network, n);
ANALYZE facet_network_combos;

CREATE TABLE network_facet_tops AS
WITH sets AS (
    SELECT DISTINCT set, present FROM facet_keys
), leaders AS MATERIALIZED (
    -- The 101st largest total (0 with fewer networks): the networks whose total reaches it
    -- are the 101 largest, or more on ties, which gives a bound as true. Materialized, as
    -- bounds is: inlined, the planner would compute them again for every row they filter.
    SELECT coalesce((SELECT total
                     FROM (SELECT DISTINCT network, total FROM facet_network_combos) AS t
                     ORDER BY total DESC OFFSET 100 LIMIT 1), 0) AS total
), leader_rows AS MATERIALIZED (
    -- Their rows (a few per network), read once rather than once per set.
    SELECT p.network, p.combo, p.n FROM facet_network_combos AS p
    WHERE p.total >= (SELECT total FROM leaders)
), bounds AS MATERIALIZED (
    -- Per set, L: the 101st largest count among those networks (0 when fewer than 101 of
    -- them have any origin in the set, and then every network is summed).
    SELECT s.set, s.present,
           coalesce((SELECT l.n
                     FROM (SELECT sum(p.n) AS n
                           FROM leader_rows AS p
                           WHERE p.combo = ANY (s.present)
                           GROUP BY p.network) AS l
                     ORDER BY l.n DESC OFFSET 100 LIMIT 1), 0)::bigint AS bound
    FROM sets AS s
), summed AS (
    -- The candidates' exact counts: per combination of the set, only the rows of networks
    -- whose total reaches L, read as a range of the index.
    SELECT b.set, p.network, sum(p.n)::bigint AS n
    FROM bounds AS b
    CROSS JOIN unnest(b.present) AS m (combo)
    CROSS JOIN LATERAL (
        SELECT p.network, p.n FROM facet_network_combos AS p
        WHERE p.combo = m.combo AND p.total >= b.bound
    ) AS p
    GROUP BY b.set, p.network
), ranked AS (
    SELECT set, network, n,
           row_number() OVER (PARTITION BY set ORDER BY n DESC, network) AS rank
    FROM summed
)
SELECT r.set, k.id AS network_id, r.n, r.rank::integer AS rank
FROM ranked AS r
LEFT JOIN network_numbers AS k ON k.number = r.network
WHERE r.rank <= 101;

DROP TABLE facet_network_combos;

CREATE INDEX network_facet_tops_idx ON network_facet_tops (set, rank) INCLUDE (network_id, n);

-- The station_id facet of the same listings, ranked at load per set as network_facet_tops is:
-- the first 101 stations (null: unallocated) by origins matching. Summing the stations'
-- counts at request time read a row per station and combination on every request.
CREATE TABLE station_facet_tops AS
WITH sets AS (
    SELECT DISTINCT set, present FROM facet_keys
), per_station AS (
    SELECT c.station, c.combo, c.n FROM station_combo_counts AS c
    UNION ALL
    SELECT NULL, c.combo, c.n FROM combo_counts AS c WHERE c.combo & 2 = 0
), summed AS (
    SELECT s.set, p.station, sum(p.n)::bigint AS n
    FROM sets AS s
    CROSS JOIN unnest(s.present) AS m (combo)
    JOIN per_station AS p ON p.combo = m.combo
    GROUP BY s.set, p.station
), ranked AS (
    SELECT set, station, n,
           row_number() OVER (PARTITION BY set ORDER BY n DESC, station NULLS LAST) AS rank
    FROM summed
)
SELECT set, station, n, rank::integer AS rank FROM ranked WHERE rank <= 101;

CREATE INDEX station_facet_tops_idx ON station_facet_tops (set, rank) INCLUDE (station, n);

-- The station_id facet of one network's listing with no other filter: its first 101 stations
-- (null: unallocated) by origins, ranked at load. A large network has a row per station and
-- combination in facet_combo_counts (thousands at 1,000,000 origins), summed on every
-- request otherwise.
CREATE TABLE network_station_tops AS
WITH summed AS (
    SELECT network_id, station, sum(n)::bigint AS n
    FROM facet_combo_counts
    WHERE network_id IS NOT NULL
    GROUP BY network_id, station
), ranked AS (
    SELECT network_id, station, n,
           row_number() OVER (PARTITION BY network_id ORDER BY n DESC, station NULLS LAST)
               AS rank
    FROM summed
)
SELECT network_id, station, n, rank::integer AS rank FROM ranked WHERE rank <= 101;

CREATE INDEX network_station_tops_idx ON network_station_tops (network_id, rank)
    INCLUDE (station, n);

-- The network_id facet of one station's listing with no other filter: its first 101
-- networks (null: no network), ranked at load. A station is held in every network that
-- reaches its number, so its rows of facet_combo_counts grow with the networks.
CREATE TABLE station_network_tops AS
WITH summed AS (
    SELECT station, network_id, sum(n)::bigint AS n
    FROM facet_combo_counts
    WHERE station IS NOT NULL
    GROUP BY station, network_id
), ranked AS (
    SELECT station, network_id, n,
           row_number() OVER (PARTITION BY station
                              ORDER BY n DESC, network_id COLLATE "C" NULLS LAST) AS rank
    FROM summed
)
SELECT station, network_id, n, rank::integer AS rank FROM ranked WHERE rank <= 101;

CREATE INDEX station_network_tops_idx ON station_network_tops (station, rank)
    INCLUDE (network_id, n);

-- The facet tables' planner statistics, here rather than in analyze_graph_next.sql, so that
-- this file says all there is about them.
ANALYZE facet_combo_counts, facet_keys, network_facet_tops, station_facet_tops,
        network_station_tops, station_network_tops;
