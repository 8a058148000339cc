SELECT url, generation, digest, etag, synced_at FROM mirror WHERE one = 1;
