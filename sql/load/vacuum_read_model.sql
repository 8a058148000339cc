-- After the commit: sets the visibility map so the read model's index-only scans skip the heap.
VACUUM graph.origin_rows, graph.origin_docs, graph.origin_csv, graph.origin_search;
