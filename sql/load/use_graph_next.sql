-- Points unqualified names of this transaction at the schema being built, and gives the
-- index builds and aggregates of this one transaction more memory than a request needs.
SET LOCAL search_path = graph_next;
SET LOCAL maintenance_work_mem = '512MB';
SET LOCAL work_mem = '128MB';
