-- The change set of the first generation of a database (no previous one): every origin is
-- added (docs/api.md, Changes between generations), numbered by origin id. The same columns as
-- build_changes.sql.
CREATE TABLE changes AS
SELECT (row_number() OVER (ORDER BY r.id))::integer AS pos,
       (row_number() OVER (ORDER BY r.id))::integer AS kind_pos,
       r.id,
       'added'::text AS kind,
       '{}'::text[] AS blocks,
       NULL::text AS before,
       r.pos AS after_pos,
       o.name,
       CASE WHEN r.allocated THEN concat_ws('.', r.address_network, r.address_station,
                                            r.address_channel) END AS address
FROM graph_next.origin_rows AS r
JOIN graph_next.origins AS o ON o.id = r.id;
