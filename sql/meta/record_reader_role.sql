-- Remembers a read-only role so that later loads grant it the new graph.
INSERT INTO registry_meta.reader_roles (role_name) VALUES (%(role)s) ON CONFLICT DO NOTHING;
