-- The assembled records are no longer needed once rendered.
DROP TABLE origin_sources;
