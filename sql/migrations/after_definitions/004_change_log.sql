-- Migration 004's step that needs a definition, run by the upgrade after every migration's
-- SQL and the definitions (registry.database.migrations): every kept graph gets its net
-- changes (sql/definitions/build_net_changes.sql), oldest first, so that each builds on its
-- previous one's where that is kept.
DO $upgrade$
DECLARE
    kept record;
BEGIN
    FOR kept IN
        SELECT g.generation FROM registry_meta.generations AS g
        WHERE g.dropped_at IS NULL ORDER BY g.generation
    LOOP
        PERFORM registry_meta.build_net_changes(kept.generation);
    END LOOP;
END
$upgrade$;
