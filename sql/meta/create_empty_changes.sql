-- An empty change set in the schema unqualified names point at, with the columns a load's
-- change set has (sql/load/build_changes.sql), for a graph loaded before change sets; the
-- load's sql/load/number_changes.sql then indexes it and makes its change_lines view.
CREATE TABLE changes (
    pos       integer,
    kind_pos  integer,
    id        uuid,
    kind      text,
    blocks    text[],
    before    text,
    after_pos integer,
    name      text,
    address   text
);
