-- Returns the new generation and its commit time, recorded in graph_next.graph_info and
-- registry_meta.generations with the change set's previous generation and counts and the
-- graph's digest (which outlives the graph there, for GET /registry/generations). Runs last before the swap, so a load that fails earlier takes no
-- number. committed_at is the clock now, but always in a later whole second than the previous
-- generation's, so Last-Modified (whole seconds) changes with every generation.
WITH next AS (
    SELECT nextval('registry_meta.generation_seq') AS generation,
           greatest(clock_timestamp(),
                    (SELECT date_trunc('second', max(committed_at)) + interval '1 second'
                     FROM registry_meta.generations)) AS committed_at
), info AS (
    UPDATE graph_next.graph_info AS i
    SET generation = next.generation, committed_at = next.committed_at
    FROM next
    RETURNING i.generation, i.committed_at, i.digest
)
INSERT INTO registry_meta.generations
    (generation, committed_at, origins, previous, added, removed, changed, digest)
SELECT generation, committed_at, %(origins)s::bigint, %(previous)s::bigint, %(added)s::bigint,
       %(removed)s::bigint, %(changed)s::bigint, digest
FROM info
RETURNING generation, committed_at;
