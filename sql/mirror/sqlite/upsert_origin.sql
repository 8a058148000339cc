INSERT INTO origins (id, record) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET record = excluded.record;
