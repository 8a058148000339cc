COPY registry_mirror.origins (id, record) FROM STDIN;
