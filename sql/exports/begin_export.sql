-- Starts the one transaction an export reads in: every batch of its server-side cursor then
-- comes from the same snapshot, so a load that commits during the export is not seen.
BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;
