-- A carriage's origin_id, when given, names an origin of the document.
ALTER TABLE carriages ADD CONSTRAINT carriages_origin_fk
    FOREIGN KEY (origin_id) REFERENCES origins (id);
