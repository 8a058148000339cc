-- Returns the change set's counts (change_counts of graph_next): kind, block ('' for the
-- kind's own count) and how many.
SELECT kind, block, n FROM graph_next.change_counts;
