-- Makes the freshly built graph_next the live graph, keeping the one it replaces under its
-- generation's name, {retired} (graph_g<n>), for pinned reads. Runs last in the load's
-- transaction, so readers see the old graph until the commit and the new one from then on.
-- Renaming a schema resets every cached plan, so prepared statements pick up the new tables.
ALTER SCHEMA graph RENAME TO {retired};
ALTER SCHEMA graph_next RENAME TO graph;
