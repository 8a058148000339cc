-- Network ids are unique.
ALTER TABLE networks ADD PRIMARY KEY (id);
