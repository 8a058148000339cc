"""Hand-written SQL: the schema migrations, the graph tables, the load steps and one query per file."""
