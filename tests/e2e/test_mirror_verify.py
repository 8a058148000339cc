"""`registry mirror verify --url` against a real gunicorn: the copy's records, its mirror row
and the digest /registry/generations gives must agree; --repair exports again where they do
not (docs/mirror.md, "Commands")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from registry.digest import digest_of
from tests.mirror.mirror_support import graph, held_records, origin, origin_id, tamper
from tests.mirror.registry_harness import Registry, lines, running_registry

pytestmark = pytest.mark.e2e


@pytest.fixture
def registry(
    gunicorn_factory: Callable[..., Any], database_factory: Callable[[], str]
) -> Iterator[Registry]:
    """A registry keeping 3 change sets, of two origins (generation 1), behind the proxy."""
    with running_registry(gunicorn_factory, database_factory, keep_changes=3) as running:
        running.load(graph(origin(1, "one"), origin(2, "two")))
        yield running


def verify(registry: Registry, target: str, *extra: str) -> Any:
    """`registry mirror verify --into target --url <proxy>` and more."""
    return registry.mirror("verify", "--into", target, "--url", registry.proxy.base, *extra)


def test_verify_compares_with_the_service_and_repairs(registry: Registry, tmp_path: Path) -> None:
    """A proven copy agrees with the service (exit 0). A copy changed consistently behind the
    mirror's back (record and row), so that only the service can tell: exit 1 naming both
    digests; --repair exports again, says so, and exits 0 with the copy proven."""
    target = str(tmp_path / "copy.sqlite")
    assert registry.sync(target).returncode == 0
    done = verify(registry, target)
    assert (done.returncode, done.stdout) == (
        0,
        "generation 1: 2 origins, digest ok, the service's too\n",
    )
    assert registry.proxy.seen[-1].path == "/registry/generations"

    forged = {**registry.newest()[origin_id(1)]}
    forged["origin"] = {**forged["origin"], "name": "forged"}
    copy = {**registry.newest(), origin_id(1): forged}
    tamper(target, "UPDATE origins SET record = ? WHERE id = ?", orjson.dumps(forged).decode(),
           origin_id(1))  # fmt: skip
    tamper(target, "UPDATE mirror SET digest = ?", digest_of(copy.values()))
    done = verify(registry, target)
    assert done.returncode == 1
    assert lines(done) == [
        f"registry mirror verify: generation 1: the copy's digest is {digest_of(copy.values())}, "
        f"the service's is {registry.newest_digest()}"
    ]
    done = verify(registry, target, "--repair")
    assert done.returncode == 0, done.output
    assert lines(done) == [
        f"generation 1: the copy's digest is {digest_of(copy.values())}, the service's is "
        f"{registry.newest_digest()}: exporting again",
        "exported generation 1: 2 origins, digest ok",
    ]
    assert held_records(target) == registry.newest()
    assert verify(registry, target).returncode == 0


def test_a_generation_the_service_no_longer_lists_cannot_be_verified(
    registry: Registry, tmp_path: Path
) -> None:
    """A copy of generation 1 after four loads (3 change sets kept): the service gives no
    digest for it, exit 1; --repair brings the copy to the newest generation instead."""
    target = str(tmp_path / "copy.sqlite")
    assert registry.sync(target).returncode == 0
    for name in ("a", "b", "c", "d"):
        registry.load(graph(origin(1, name), origin(2, "two")))
    done = verify(registry, target)
    assert done.returncode == 1
    assert lines(done) == [
        "registry mirror verify: generation 1: the service gives no digest for it (no longer "
        "listed by /registry/generations, or loaded before digests)"
    ]
    done = verify(registry, target, "--repair")
    assert done.returncode == 0, done.output
    assert lines(done)[-1] == "exported generation 5: 2 origins, digest ok"
    assert held_records(target) == registry.newest()


def test_verify_of_another_url_is_a_usage_error(registry: Registry, tmp_path: Path) -> None:
    """--url must be the URL the copy was made from: exit 2 naming both, nothing asked."""
    target = str(tmp_path / "copy.sqlite")
    assert registry.sync(target).returncode == 0
    asked = len(registry.proxy.seen)
    done = registry.mirror("verify", "--into", target, "--url", registry.base)
    assert done.returncode == 2
    assert lines(done) == [
        f"registry mirror verify: {target} holds a copy of {registry.proxy.base}, "
        f"not of {registry.base}"
    ]
    assert len(registry.proxy.seen) == asked
