SELECT record::text FROM registry_mirror.origins;
