-- At most one allocation per origin.
ALTER TABLE allocations ADD PRIMARY KEY (origin_id);
