"""The database layer: connection settings, the pool, SQL files, repository, migrations, roles."""
