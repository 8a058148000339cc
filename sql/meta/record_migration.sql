-- Records one applied migration.
INSERT INTO registry_meta.schema_migrations (version, name) VALUES (%(version)s, %(name)s);
