-- As export_changes.sql, for the changed origins whose record differs in block %(block)s.
SELECT c.{column}
FROM {graph}.change_blocks AS b
JOIN {graph}.change_lines AS c ON c.pos = b.pos
WHERE b.block = %(block)s
ORDER BY b.block_pos;
