-- A governance edge names an origin of the document.
ALTER TABLE governance_edges ADD CONSTRAINT governance_edges_origin_fk
    FOREIGN KEY (origin_id) REFERENCES origins (id);
