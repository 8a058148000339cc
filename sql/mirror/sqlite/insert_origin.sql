-- An export's row: the record comes as the UTF-8 bytes of its line (checked by the mirror)
-- and is stored as text, byte for byte.
INSERT INTO origins (id, record) VALUES (?, CAST(? AS TEXT));
