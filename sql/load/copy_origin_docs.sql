-- Receives the rendered records.
COPY origin_docs (pos, doc) FROM STDIN;
