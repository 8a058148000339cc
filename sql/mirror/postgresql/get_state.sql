SELECT url, generation, digest, etag,
    to_char(synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM registry_mirror.mirror;
