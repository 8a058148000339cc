DELETE FROM registry_mirror.origins WHERE id = ANY(%(ids)s);
