-- An allocation names an origin of the document.
ALTER TABLE allocations ADD CONSTRAINT allocations_origin_fk
    FOREIGN KEY (origin_id) REFERENCES origins (id);
