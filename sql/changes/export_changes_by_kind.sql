-- As export_changes.sql, for the changes of one kind (%(kind)s).
SELECT c.{column} FROM {graph}.change_lines AS c WHERE c.kind = %(kind)s ORDER BY c.kind_pos;
