-- Points unqualified names of this transaction at the schema being built.
SET LOCAL search_path = graph_next;
