SELECT count(*) FROM registry_mirror.origins;
