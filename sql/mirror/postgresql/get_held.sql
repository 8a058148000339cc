SELECT id, record::text FROM registry_mirror.origins WHERE id = ANY(%(ids)s);
