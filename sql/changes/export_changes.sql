-- Returns every change of the graph in schema {graph} as its JSON object (line) or CSV row
-- (csv_line), by origin id; read through a server-side cursor in batches. The column is
-- chosen by the caller: {column}.
SELECT c.{column} FROM {graph}.change_lines AS c ORDER BY c.pos;
