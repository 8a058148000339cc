INSERT INTO registry_mirror.origins (id, record) VALUES (%s, %s::jsonb)
ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record;
