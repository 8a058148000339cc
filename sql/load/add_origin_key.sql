-- Origin ids are unique.
ALTER TABLE origins ADD PRIMARY KEY (id);
