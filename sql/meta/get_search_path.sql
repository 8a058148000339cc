-- Returns where unqualified names point now, to point them back after a step that moved them.
SELECT current_setting('search_path') AS search_path;
