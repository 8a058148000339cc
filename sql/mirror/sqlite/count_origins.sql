SELECT count(*) FROM origins;
