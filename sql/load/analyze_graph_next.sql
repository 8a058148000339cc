-- Planner statistics for the new graph, inside the load's transaction.
ANALYZE graph_next.networks, graph_next.origins, graph_next.governance_edges,
        graph_next.allocations, graph_next.carriages, graph_next.origin_rows,
        graph_next.origin_docs, graph_next.origin_csv, graph_next.origin_search,
        graph_next.network_numbers, graph_next.combo_counts, graph_next.network_combo_counts,
        graph_next.station_combo_counts, graph_next.block_combo_counts,
        graph_next.changes, graph_next.change_blocks, graph_next.change_counts,
        graph_next.origin_doc_hashes;
