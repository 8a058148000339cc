-- Returns the id of an origin the newest generation changed (the first by origin id), or
-- NULL when it changed none: the origin whose history `make bench` asks for. Served by
-- changes_kind_idx.
SELECT (SELECT 'svc:origin:' || id FROM graph.changes
        WHERE kind = 'changed' AND kind_pos = 1) AS changed_id;
