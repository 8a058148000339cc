-- Builds net_buckets of generation n (migration 011) from its net changes: for every since
-- from n's oldest since up to n - 1 and every bucket of origin ids (their first byte), how
-- many net changes answer that since, in all (what = '') and per kind and block. A net change
-- answers the sinces lo <= m < until, so the counts are running sums of +1 at lo and -1 at
-- until per bucket, as net_counts' are per since (build_net_changes). Empty buckets get no
-- row. Run by build_net_changes, and by the upgrade to migration 011 for kept generations.
CREATE OR REPLACE FUNCTION registry_meta.build_net_buckets(n bigint) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM registry_meta.net_buckets WHERE generation = n;
    INSERT INTO registry_meta.net_buckets (generation, since, what, start, total)
    WITH rows AS (
        SELECT get_byte(uuid_send(x.id), 0) AS bucket, x.lo, x.until,
               ARRAY['', x.kind] || x.blocks AS whats
        FROM registry_meta.net_changes AS x
        WHERE x.generation = n
    ), steps AS (
        SELECT r.bucket, w.what, e.at, sum(e.d) AS d
        FROM rows AS r
        CROSS JOIN LATERAL unnest(r.whats) AS w (what)
        CROSS JOIN LATERAL (VALUES (r.lo, 1), (r.until, -1)) AS e (at, d)
        GROUP BY r.bucket, w.what, e.at
    ), sinces AS (
        SELECT g.generation AS since
        FROM registry_meta.generations AS g, registry_meta.oldest_since_row(n) AS o
        WHERE g.generation >= o.since AND g.generation < n
    )
    SELECT n, s.since, t.what,
           (lpad(to_hex(t.bucket), 2, '0') || '000000-0000-0000-0000-000000000000')::uuid,
           sum(t.d)
    FROM sinces AS s
    JOIN steps AS t ON t.at <= s.since
    GROUP BY s.since, t.what, t.bucket
    HAVING sum(t.d) > 0;
$fn$;
