"""Hand-written SQL: migrations, the graph tables, the load steps and one query per file."""
