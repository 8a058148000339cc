"""`registry mirror sync` keeps a copy in step with the registry (docs/mirror.md), driven as a
consumer runs it, against real gunicorn and through the shipped nginx with its /v1 prefix,
into either store: the first export, a step of net changes, a 304 when nothing was loaded,
and one step across several loads. After every step the copy is the export of the generation
reached, its digest the service's (Registry-Digest), and `status` and `verify` agree."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import orjson
import psycopg
import pytest

from registry.digest import canonical
from tests.loader.test_record_key_order import as_written_unsorted
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, step_line, sync
from tests.mirror.registry_stack import Registry, demo, twin

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED = 300, 11


def net_changes(registry: Registry, since: int, generation: int) -> int:
    """How many origins differ between two generations (the service's own count)."""
    answer = registry.get(f"/registry/changes?since={since}&generation={generation}&limit=1")
    assert answer.status == 200, answer.body
    return int(answer.json()["page"]["total"])


# Each store and each way in once (the other files cover the other pairs).
@pytest.mark.parametrize(("kind", "through"), [("sqlite", "direct"), ("postgresql", "nginx")])
def test_a_copy_follows_exports_changes_and_304s(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    kind: str,
    through: str,
    request: pytest.FixtureRequest,
):
    """Export, a step, nothing new (a 304), and three loads in one step: each run ends at the
    newest generation with the copy equal to its export and the digests agreeing."""
    if through == "nginx":
        request.getfixturevalue("nginx_installed")
    registry = registry_factory(nginx=through == "nginx")
    url = registry.url(through)
    store = store_factory(kind)

    first = registry.load(demo(ORIGINS, SEED))
    done = sync(url, store)
    step_line(
        done, f"exported generation {first}: {registry.export(first).total} origins, digest ok"
    )
    assert_converged(store, registry, url, first, done)

    second = registry.load(twin(ORIGINS, SEED, 0.2))
    count = net_changes(registry, first, second)
    assert count > 0
    done = sync(url, store)
    step_line(done, f"generation {first} -> {second}: {count} changes, digest ok")
    assert_converged(store, registry, url, second, done)

    # Nothing loaded: not modified; within two runs (the first may ask a URL it holds no
    # ETag for) the service answers 304 to the ETag of the answer before, and the copy stays.
    mark = registry.log_size()
    for _ in range(2):
        done = sync(url, store)
        step_line(done, f"generation {second}: not modified")
        assert_converged(store, registry, url, second, done)
        if 304 in [entry["status"] for entry in registry.requests(mark)]:
            break
    assert 304 in [entry["status"] for entry in registry.requests(mark)]

    # Three loads missed: removed, re-added and changed origins, in one step.
    registry.load(twin(ORIGINS, SEED, 0.5))
    registry.load(demo(ORIGINS, SEED))
    newest = registry.load(twin(ORIGINS, SEED, 0.05))
    count = net_changes(registry, second, newest)
    done = sync(url, store)
    step_line(done, f"generation {second} -> {newest}: {count} changes, digest ok")
    assert_converged(store, registry, url, newest, done)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_export_whose_lines_are_not_canonical_is_proven_from_its_records(
    registry_factory: Callable[..., Registry], store_factory: Callable[[str], Store], kind: str
):
    """A graph rendered before the service sent records in their canonical form (its keys in
    another order) exports other bytes for the same records: the sum of the lines' hashes is
    not the digest, so the step settles it from the records themselves, keeps the lines as
    they came, and steps on from there (docs/mirror.md, "Proof")."""
    registry = registry_factory()
    url = registry.url()
    store = store_factory(kind)
    first = registry.load(demo(ORIGINS, SEED))
    with psycopg.connect(registry.conninfo, autocommit=True) as conn:
        as_written_unsorted(conn)
    lines = registry.export(first).lines
    assert all(line != canonical(orjson.loads(line)) for line in lines.values())

    done = sync(url, store)
    step_line(done, f"exported generation {first}: {len(lines)} origins, digest ok")
    assert_converged(store, registry, url, first, done)
    if kind == "sqlite":
        with sqlite3.connect(store.target) as conn:
            held = dict(conn.execute("SELECT id, CAST(record AS BLOB) FROM origins"))
        assert held == lines

    second = registry.load(twin(ORIGINS, SEED, 0.2))
    done = sync(url, store)
    step_line(
        done,
        f"generation {first} -> {second}: {net_changes(registry, first, second)} changes, "
        "digest ok",
    )
    assert_converged(store, registry, url, second, done)
