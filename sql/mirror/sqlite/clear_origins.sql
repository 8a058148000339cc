DELETE FROM origins;
