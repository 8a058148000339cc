-- Each origin's record as the API sends it (JSON text dumped by OriginSchema), keyed by pos.
CREATE TABLE origin_docs (
    pos integer NOT NULL,
    doc text NOT NULL
);
