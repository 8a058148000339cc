-- Drops one retired generation's schema, {schema} (graph_g<n>), after the load that retired
-- it committed; load/mark_generation_dropped runs in the same transaction, so a pinned read
-- finds either the schema or the mark, never neither.
DROP SCHEMA IF EXISTS {schema} CASCADE;
