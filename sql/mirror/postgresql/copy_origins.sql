-- An export's rows, in COPY's binary format (registry/mirror/postgres_store.py, copy_rows).
COPY registry_mirror.origins (id, record) FROM STDIN (FORMAT binary);
