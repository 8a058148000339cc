-- The rendered records by position (GET /origins pages and lookups read them by pos).
ALTER TABLE origin_docs ADD PRIMARY KEY (pos);
