INSERT INTO mirror (one, url, generation, digest, etag, synced_at)
VALUES (1, :url, :generation, :digest, :etag, :synced_at)
ON CONFLICT (one) DO UPDATE SET
    url = excluded.url,
    generation = excluded.generation,
    digest = excluded.digest,
    etag = excluded.etag,
    synced_at = excluded.synced_at;
