INSERT INTO origins (id, record) VALUES (?, ?);
