-- Carriage ids are unique.
ALTER TABLE carriages ADD PRIMARY KEY (id);
