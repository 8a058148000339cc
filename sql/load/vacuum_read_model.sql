-- After the commit: sets the visibility map of the read model of the generation in schema
-- {graph}, so that its index-only scans skip the heap (registry/loader/visibility.py), the
-- net changes' included (docs/api.md, Changes since any generation: a page of since= is a range of
-- their index).
VACUUM {graph}.origin_rows, {graph}.origin_docs, {graph}.origin_csv, {graph}.origin_search,
    registry_meta.net_changes, registry_meta.net_counts, registry_meta.net_buckets;
