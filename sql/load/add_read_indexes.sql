-- Indexes of the read model, built after its tables are filled (origin_docs has its own,
-- add_origin_docs_key.sql, built once the rendered records are in). Nothing that answers a
-- request reads carriages or governance_edges (the records hold them), so they get no index
-- beyond the keys the whole-document checks add.
ALTER TABLE origin_rows ADD PRIMARY KEY (pos);
ALTER TABLE origin_rows ADD CONSTRAINT origin_rows_id_key UNIQUE (id);
ALTER TABLE origin_csv ADD PRIMARY KEY (pos);
ALTER TABLE origin_search ADD PRIMARY KEY (pos);
ALTER TABLE network_numbers ADD PRIMARY KEY (number);
ALTER TABLE network_numbers ADD CONSTRAINT network_numbers_id_key UNIQUE (id);
CREATE UNIQUE INDEX origin_rows_address_idx
    ON origin_rows (address_network, address_station, address_channel) WHERE allocated;
CREATE INDEX origin_rows_network_idx ON origin_rows (network_id, pos)
    INCLUDE (combo, address_station);
CREATE INDEX origin_rows_station_idx ON origin_rows (address_station, pos) INCLUDE (combo);
-- Flag-filtered pages walk positions in order and test combo without visiting the heap.
CREATE INDEX origin_rows_pos_combo_idx ON origin_rows (pos) INCLUDE (combo);
