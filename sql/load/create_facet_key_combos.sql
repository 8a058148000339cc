-- Every combination of flag filter values by its key, with the flag combinations it admits
-- (%(keys)s: a JSON object, key -> [combo, ...], from registry/database/facets.py
-- facet_key_combos, computed by the function the listing filters with), for
-- build_filter_counts.sql to rank the network_id and station_id facets by; dropped there.
CREATE TABLE facet_key_combos AS
SELECT k.key,
       ARRAY(SELECT c.combo::smallint
             FROM jsonb_array_elements_text(k.combos) WITH ORDINALITY AS c (combo, place)
             ORDER BY c.place) AS combos
FROM jsonb_each(%(keys)s::jsonb) AS k (key, combos);
