-- Returns how many origins the live graph holds.
SELECT count(*) FROM graph.origin_rows;
