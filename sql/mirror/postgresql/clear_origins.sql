-- DELETE, not TRUNCATE: TRUNCATE would lock readers of the copy out until the export
-- commits; DELETE lets them read the previous generation meanwhile.
DELETE FROM registry_mirror.origins;
