INSERT INTO registry_mirror.mirror (one, url, generation, digest, etag, synced_at)
VALUES (true, %(url)s, %(generation)s, %(digest)s, %(etag)s, %(synced_at)s::timestamptz)
ON CONFLICT (one) DO UPDATE SET
    url = EXCLUDED.url,
    generation = EXCLUDED.generation,
    digest = EXCLUDED.digest,
    etag = EXCLUDED.etag,
    synced_at = EXCLUDED.synced_at;
