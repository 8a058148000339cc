"""`registry mirror`: a consumer's own copy of the registry, kept in step and proven equal to
the registry's generation by its digest (docs/mirror.md).

The package talks to the service over HTTP only: it imports nothing of `registry.api`,
`registry.loader`, `registry.database` or `registry.tokens`, and never Flask (the `mirror`
contract in setup.cfg), so that it is the consumer any client could be. Its modules, top
down: `command` (the subcommands), `steps` (one step: export or changes, with its proof),
`polite` (retries and back-off), `parser` (an export's lines parsed and hashed, in a second
process when it is large), `client` (HTTP), `body` (counted NDJSON batches), `stores` with
`sqlite_store` and `postgres_store` (the copy), `progress` (the terminal).
"""
