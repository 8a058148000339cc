-- Each origin's CSV row (docs/export.md) as the export sends it, keyed by pos: the fields of its
-- record, each written as Python's csv module writes it (RFC 4180: a field is quoted only when
-- it holds a comma, a quote, CR or LF, its quotes doubled), comma-separated, ending in CRLF.
-- A CSV export then streams stored lines, as the NDJSON export streams stored records.
-- Every value is read from the tables the record is assembled from (build_origin_sources.sql),
-- by the same rules: held.at is the same RFC 3339 text, held is null unless the allocation is
-- held, presentations and transports are origin_rows' (every carriage of a reviewed origin).
-- Spreadsheet safety: a text field taken from the graph (name, registry id, network id and
-- name, held reason) that begins with =, +, -, @, a tab or a carriage return gets a single
-- quote in front; nothing else can begin so (ids, numbers, fixed words, dates).
-- tests/api/test_export.py checks the rows byte for byte against registry.api.origin_csv.
CREATE TABLE origin_csv AS
WITH fields AS (
    SELECT r.pos,
           'svc:origin:' || r.id AS id,
           CASE WHEN left(o.name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                THEN '''' ELSE '' END || o.name AS name,
           CASE WHEN left(o.registry_id, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                THEN '''' ELSE '' END || o.registry_id AS registry_id,
           CASE WHEN left(o.network_id, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                THEN '''' ELSE '' END || o.network_id AS network_id,
           CASE WHEN left(n.name, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                THEN '''' ELSE '' END || n.name AS network_name,
           CASE WHEN r.governed THEN 'governed' ELSE 'ungoverned' END AS governance_state,
           r.active_edges,
           CASE WHEN r.allocated THEN 'true' ELSE 'false' END AS allocated,
           concat_ws('.', a.network, a.station, a.channel) AS address,
           a.network,
           a.station,
           a.channel,
           a.publication_status,
           CASE WHEN a.publication_status = 'held' THEN
               to_char(a.held_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
               || CASE WHEN date_trunc('second', a.held_at) = a.held_at THEN ''
                       ELSE to_char(a.held_at AT TIME ZONE 'UTC', '.US') END
               || 'Z' END AS held_at,
           CASE WHEN a.publication_status = 'held' THEN
               CASE WHEN left(a.held_reason, 1) IN ('=', '+', '-', '@', E'\t', E'\r')
                    THEN '''' ELSE '' END || a.held_reason END AS held_reason,
           concat_ws(';', CASE WHEN r.transports & 1 <> 0 THEN 'iptv' END,
                          CASE WHEN r.transports & 2 <> 0 THEN 'ovp' END,
                          CASE WHEN r.transports & 4 <> 0 THEN 'ota' END,
                          CASE WHEN r.transports & 8 <> 0 THEN 'fast' END) AS transports,
           r.presentations
    FROM origin_rows AS r
    JOIN origins AS o ON o.id = r.id
    LEFT JOIN networks AS n ON n.id = o.network_id
    LEFT JOIN allocations AS a ON a.origin_id = o.id
)
-- concat() writes null as nothing, as the csv module writes None. Only the graph's own text
-- can hold a comma, a quote, CR or LF, so only those fields are ever quoted.
SELECT pos,
       concat(id, ',',
              CASE WHEN name ~ E'[",\r\n]'
                   THEN '"' || replace(name, '"', '""') || '"' ELSE name END, ',',
              CASE WHEN registry_id ~ E'[",\r\n]'
                   THEN '"' || replace(registry_id, '"', '""') || '"' ELSE registry_id END, ',',
              CASE WHEN network_id ~ E'[",\r\n]'
                   THEN '"' || replace(network_id, '"', '""') || '"' ELSE network_id END, ',',
              CASE WHEN network_name ~ E'[",\r\n]'
                   THEN '"' || replace(network_name, '"', '""') || '"' ELSE network_name END, ',',
              governance_state, ',', active_edges, ',', allocated, ',', address, ',',
              network, ',', station, ',', channel, ',', publication_status, ',', held_at, ',',
              CASE WHEN held_reason ~ E'[",\r\n]'
                   THEN '"' || replace(held_reason, '"', '""') || '"' ELSE held_reason END, ',',
              transports, ',', presentations, E'\r\n') AS line
FROM fields;
