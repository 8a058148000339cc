-- The graph tables, created empty in the schema a load builds (search_path points there).
-- Keys, references and uniqueness are added by sql/load/ once the rows are in, so that
-- COPY runs without index upkeep; the CHECKs here hold row by row from the first row on.
-- source_line is the line of the graph document a row came from, for error messages.
-- The text ids compare as bytes (COLLATE "C"): an id is equal only to the same bytes under
-- any deterministic collation, so uniqueness and references mean the same, and nothing is
-- ordered by them, but the database's own collation would make every key and index build on
-- them sort through strcoll (30 % slower for the carriage key at a million origins).

CREATE TABLE networks (
    id          text COLLATE "C" NOT NULL CHECK (id <> ''),
    name        text,
    source_line integer NOT NULL
);

CREATE TABLE origins (
    id          uuid NOT NULL,
    name        text NOT NULL,
    network_id  text COLLATE "C",
    registry_id text,
    reviewed    boolean NOT NULL,
    -- case-folded name and registry id for `search` (folded by the loader, the same
    -- way the API folds the search term, so matching does not depend on the locale)
    name_key    text NOT NULL,
    registry_key text,
    source_line integer NOT NULL
);

CREATE TABLE governance_edges (
    origin_id   uuid NOT NULL,
    governor_id text NOT NULL CHECK (governor_id <> ''),
    active      boolean NOT NULL,
    source_line integer NOT NULL
);

CREATE TABLE allocations (
    origin_id   uuid NOT NULL,
    network     integer NOT NULL CHECK (network >= 0),
    station     integer NOT NULL CHECK (station >= 0),
    channel     integer NOT NULL CHECK (channel >= 0),
    publication_status text CHECK (publication_status IN ('published', 'held')),
    held_at     timestamptz,
    held_reason text,
    source_line integer NOT NULL,
    CONSTRAINT held_has_time CHECK (
        CASE WHEN publication_status = 'held' THEN held_at IS NOT NULL ELSE held_at IS NULL END
    )
);

CREATE TABLE carriages (
    id          text COLLATE "C" NOT NULL CHECK (id <> ''),
    transport   text CHECK (transport IN ('iptv', 'ovp', 'ota', 'fast')),
    provider    text,
    source      text,
    availability text,
    origin_id   uuid,
    source_line integer NOT NULL,
    CONSTRAINT resolvable_has_transport CHECK (origin_id IS NULL OR transport IS NOT NULL)
);

CREATE TABLE catalog (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    transports  text[] NOT NULL
        CHECK (transports <@ ARRAY['iptv', 'ovp', 'ota', 'fast']::text[]),
    source_line integer NOT NULL
);

CREATE TABLE feed (
    only_row        boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    connected       boolean NOT NULL,
    networks        bigint,
    iptv_networks   bigint,
    ovp_networks    bigint,
    channels        bigint,
    programs        bigint,
    reviews         bigint,
    pending_reviews bigint,
    source_line     integer NOT NULL
);
