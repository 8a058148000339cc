-- After the commit: sets the visibility map of the read model of the generation in schema
-- {graph}, so that its index-only scans skip the heap (registry/loader/visibility.py).
VACUUM {graph}.origin_rows, {graph}.origin_docs, {graph}.origin_csv, {graph}.origin_search;
