-- An origin's network_id names a network of the document.
ALTER TABLE origins ADD CONSTRAINT origins_network_fk FOREIGN KEY (network_id) REFERENCES networks (id);
