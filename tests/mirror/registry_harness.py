"""A registry to mirror, for the mirror's own end-to-end tests: a database that `registry
load` fills (with its model of every generation's records), a real gunicorn over it, the
fault proxy in front, and `registry mirror` run against them in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from registry.digest import digest_of
from tests.cli import Finished, run_cli
from tests.conftest import TEST_SECRET, make_token
from tests.mirror.fault_proxy import FaultProxy
from tests.properties.catchup_support import CatchupGraph


class Registry:
    """The registry under test and the ways the tests reach it."""

    def __init__(self, loads: CatchupGraph, base: str, proxy: FaultProxy):
        self.loads = loads
        self.base = base
        self.proxy = proxy
        self.token = make_token()

    def load(self, records: list[dict[str, Any]]) -> int:
        """`registry load` of a document; the generation committed."""
        return self.loads.load(records)

    def mirror(self, *args: str, token: str | None = None) -> Finished:
        """`registry mirror ARGS` with the token in REGISTRY_TOKEN."""
        return run_cli(["mirror", *args], env={"REGISTRY_TOKEN": token or self.token})

    def sync(self, target: str, *extra: str, url: str | None = None) -> Finished:
        """`registry mirror sync` through the proxy (or url) into target."""
        return self.mirror("sync", "--url", url or self.proxy.base, "--into", target, *extra)

    def newest(self) -> dict[str, dict[str, Any]]:
        """The newest generation's records as the model computed them, by id."""
        return dict(self.loads.chain.generations[-1].records)

    def newest_digest(self) -> str:
        """The digest of the newest generation, from the model's records."""
        return digest_of(self.newest().values())


@contextmanager
def running_registry(
    gunicorn_factory: Callable[..., Any],
    database_factory: Callable[[], str],
    keep_changes: int = 3,
) -> Iterator[Registry]:
    """A fresh database, gunicorn over it and the proxy in front, for one test."""
    conninfo = database_factory()
    loads = CatchupGraph(conninfo, keep_generations=2, keep_changes=keep_changes)
    server = gunicorn_factory({"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET})
    proxy = FaultProxy(server.base)
    try:
        yield Registry(loads, server.base, proxy)
    finally:
        proxy.close()
        loads.close()


def lines(done: Finished) -> list[str]:
    """The lines a command wrote on standard error."""
    return done.stderr.splitlines()
