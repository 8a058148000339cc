"""`registry mirror sync` when the registry cannot answer the copy's `since` (docs/mirror.md,
docs/api.md "Keeping a mirror"), when the copy is another URL's, and with the token given
each way it may be: a 410 (retention passed the copy) and a 404 (the registry's database made
again) export again and replace the copy, removed origins included; another URL is refused
without --reset; --token-file works; a refused token (401, 403) ends the run at once."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import make_token
from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, assert_whole, sync
from tests.mirror.mirror_support import origin
from tests.mirror.registry_stack import Registry, demo, graph, twin

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED = 200, 23


@pytest.mark.parametrize("kind", STORES)
def test_a_copy_older_than_the_kept_change_sets_is_exported_again(
    registry_factory: Callable[..., Registry], store_factory: Callable[[str], Store], kind: str
):
    """REGISTRY_KEEP_CHANGES 2: three loads after the copy's generation, its since is gone
    (410); the run says so, exports the newest and replaces the copy whole, so origins
    removed in between are gone from it."""
    registry = registry_factory(keep_generations=2, keep_changes=2)
    url, store = registry.url(), store_factory(kind)
    first = registry.load(demo(ORIGINS, SEED))
    assert_converged(store, registry, url, first, sync(url, store))
    registry.load(twin(ORIGINS, SEED, 0.4))
    registry.load(twin(ORIGINS, SEED, 0.8))
    newest = registry.load(twin(ORIGINS, SEED, 0.6))
    gone = registry.export(first).lines.keys() - registry.export(newest).lines.keys()
    assert gone, "the newest generation lacks origins the copy holds"
    oldest = registry.get("/registry/generations").json()["oldest_since"]
    assert oldest > first
    done = sync(url, store)
    total = registry.export(newest).total
    assert done.lines == [
        f"since {first} is gone (410): exporting again",
        f"exported generation {newest}: {total} origins, digest ok",
    ], done.stderr
    assert_converged(store, registry, url, newest, done)


def test_a_copy_of_a_database_made_again_is_exported_again(
    registry_factory: Callable[..., Registry], store_factory: Callable[[str], Store]
):
    """The registry's database dropped and made again, then loaded: the copy's generation
    was never produced there (404), so the run exports again and replaces the copy."""
    registry = registry_factory()
    url, store = registry.url(), store_factory("sqlite")
    registry.load(demo(ORIGINS, SEED))
    registry.load(twin(ORIGINS, SEED, 0.3))
    held = registry.load(twin(ORIGINS, SEED + 1, 0.3))
    assert_converged(store, registry, url, held, sync(url, store))
    registry.recreate_database()
    fresh = registry.load(demo(ORIGINS // 2, SEED + 2))
    assert fresh < held
    done = sync(url, store)
    total = registry.export(fresh).total
    assert done.lines[-2:] == [
        f"since {held} is gone (404): exporting again",
        f"exported generation {fresh}: {total} origins, digest ok",
    ], done.stderr
    assert_converged(store, registry, url, fresh, done)


def test_a_copy_of_another_url_is_refused_unless_reset(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    nginx_installed: None,
):
    """A copy made from gunicorn's URL, synced from nginx's: exit 2 naming both URLs, the
    copy untouched; with --reset the copy is made again from the new URL."""
    registry = registry_factory(nginx=True)
    direct, proxied = registry.url("direct"), registry.url("nginx")
    store = store_factory("sqlite")
    first = registry.load(demo(ORIGINS, SEED))
    assert_converged(store, registry, direct, first, sync(direct, store))
    second = registry.load(twin(ORIGINS, SEED, 0.3))
    before = store.state()
    done = sync(proxied, store)
    assert done.returncode == 2, done.stderr
    assert direct in done.stderr and proxied in done.stderr, done.stderr
    assert store.state() == before
    done = sync(proxied, store, "--reset")
    assert_converged(store, registry, proxied, second, done)


def test_the_token_comes_from_a_file_and_never_from_the_command_line(
    registry_factory: Callable[..., Registry], store_factory: Callable[[str], Store], tmp_path: Path
):
    """--token-file with REGISTRY_TOKEN unset: the copy is made. A --token option does not
    exist: a usage error (exit 2), and nothing is written."""
    registry = registry_factory()
    url, store = registry.url(), store_factory("sqlite")
    generation = registry.load(graph(origin(1, "one", 5), origin(2, "two")))
    token_file = tmp_path / "token"
    token_file.write_text(make_token() + "\n")
    token_file.chmod(0o600)
    refused = sync(url, store, "--token", make_token(), token=None)
    assert refused.returncode == 2, refused.stderr
    assert store.row() is None
    done = sync(url, store, "--token-file", str(token_file), token=None)
    assert_converged(store, registry, url, generation, done)


@pytest.mark.parametrize(
    ("status", "token"),
    [
        (401, make_token(secret="another-secret-that-is-long-enough-for-hs256-xyz")),
        (403, make_token(roles=("viewer",))),
    ],
)
def test_a_refused_token_ends_the_run_at_once(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    status: int,
    token: str,
):
    """A token the service refuses: exit 1 with the server's error, after exactly one
    request (no retry), the copy as it was."""
    registry = registry_factory()
    url, store = registry.url(), store_factory("sqlite")
    first = registry.load(demo(ORIGINS, SEED))
    assert_converged(store, registry, url, first, sync(url, store))
    registry.load(twin(ORIGINS, SEED, 0.3))
    mark = registry.log_size()
    done = sync(url, store, token=token)
    assert done.returncode == 1, done.stderr
    assert re.search(rf"\b{status}\b", done.stderr), done.stderr
    error = "Unauthorized" if status == 401 else "Domain admin access required"
    assert error in done.stderr, done.stderr
    assert [entry["status"] for entry in registry.requests(mark)] == [status]
    assert_whole(store, registry, first)
