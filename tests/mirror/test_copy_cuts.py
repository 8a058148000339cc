"""A step's body cut in the middle (docs/mirror.md, docs/export.md "A cut export never looks
complete"): the gunicorn workers killed while the export or the change set streams to the
mirror, or nginx stopped under it. The step is not applied (the copy stays as it was, and the
run asks for the same step again), it is retried, and the run converges.

A relay between the mirror and the server slows the body, so that the cut lands in it, and
holds the retry at its gate while the test looks at the copy."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.production_stack import nginx_binary, wait_for_port
from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, start, sync, wait_for
from tests.mirror.registry_stack import NDJSON, Registry, demo, twin
from tests.mirror.relay import Relay

pytestmark = [pytest.mark.e2e]

# Direct, the body is cut at 60 % of it: past several thousand lines, so that a mirror that
# writes as it reads has writes to undo, and still megabytes short of the end, more than the
# buffers between the server and the relay hold (a worker's capped send buffer and the
# relay's window: under 1 MB). About 7 MB of NDJSON for the export, 5 MB of changes.
ORIGINS, SEED = 8_000, 61
CUT_AT = 0.6
# nginx gzips the body (the mirror asks for gzip) about tenfold and sends from a buffer of
# 512 KB: a larger graph, cut early (100 KB of gzip in, about a megabyte of NDJSON).
NGINX_ORIGINS, NGINX_CUT_BYTES = 15_000, 100_000
SLOW_RATE = 1_000_000


def prepare(registry: Registry, relay: Relay, store: Store, step: str) -> tuple[int, int | None]:
    """Load what the step will read: (the generation it must reach, the copy's before it)."""
    url = f"http://127.0.0.1:{relay.port}{'/v1' if registry.nginx else ''}"
    origins = NGINX_ORIGINS if registry.nginx else ORIGINS
    first = registry.load(demo(origins, SEED))
    if step == "export":
        return first, None
    assert_converged(store, registry, url, first, sync(url, store))
    return registry.load(twin(origins, SEED, 0.5)), first


def body_size(registry: Registry, copied: tuple[int, int | None]) -> int:
    """The bytes of the step's body as gunicorn sends it (NDJSON, not gzipped)."""
    target, held = copied
    if held is None:
        return sum(len(line) + 1 for line in registry.export(target).lines.values())
    answer = registry.get(f"/registry/changes?since={held}&generation={target}", NDJSON)
    assert answer.status == 200
    return len(answer.body)


def step_requests(registry: Registry, mark: int) -> list[tuple[str, str]]:
    """The export and change requests gunicorn logged after mark: (path without the /v1
    that nginx passes on, query)."""
    paths = ("/registry/origins", "/registry/changes")
    found = []
    for entry in registry.requests(mark):
        path = entry["path"].removeprefix("/v1")
        if path in paths:
            found.append((path, entry.get("query", "")))
    return found


def peek(store: Store) -> Any:
    """The copy as committed now (row and records); None when a SQLite store stays locked
    by a writer (its transaction open, so nothing of it is committed)."""
    try:
        return store.state(busy_timeout_s=2)
    except sqlite3.OperationalError as error:
        if "locked" not in str(error):
            raise
        return None


def cut_and_converge(
    registry: Registry,
    relay: Relay,
    store: Store,
    url: str,
    folder: Path,
    copied: tuple[int, int | None],
    cut: Callable[[], None],
    mend: Callable[[], None],
    under_way: int,
) -> None:
    """Start a run through the slowed relay; once its body is under way, close the gate and
    cut; once the run comes back, check that nothing was applied; open the gate, mend, and
    see the run converge at the generation it was after, having asked only for that step."""
    target, held = copied
    before = peek(store)
    mark = registry.log_size()
    relay.rate = SLOW_RATE
    relayed = relay.relayed
    running = start(folder, "sync", "--url", url, "--into", store.target)
    try:
        wait_for(lambda: relay.relayed > relayed + under_way, "the step's body under way")
        relay.hold()
        connections = relay.connections
        cut()
        wait_for(
            lambda: relay.connections > connections or not running.alive(),
            "the run asking again (or ending)",
        )
        seen = peek(store)
        assert seen is None or seen == before, "a cut body was applied"
        assert running.alive(), f"the run ended after the cut:\n{running.stderr()}"
        relay.rate = None
        relay.open()
        mend()
        done = running.wait()
    finally:
        relay.open()
        running.kill()
    asked = step_requests(registry, mark)
    assert_converged(store, registry, url, target, done)
    assert asked, "the step reached gunicorn"
    for path, query in asked:
        if held is None:
            assert path == "/registry/origins" and "since" not in query, asked
        else:
            assert path == "/registry/changes" and f"since={held}" in query.split("&"), asked


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("step", ["export", "changes"])
def test_a_body_cut_by_killed_workers_is_retried(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    step: str,
    kind: str,
):
    """Every gunicorn worker killed while the body streams: the body ends cut, the copy is
    unchanged, the run asks again and converges."""
    registry = registry_factory()
    relay = Relay(registry.gunicorn.port)
    store = store_factory(kind)
    try:
        copied = prepare(registry, relay, store, step)
        url = f"http://127.0.0.1:{relay.port}"

        def kill_workers() -> None:
            """kill -9 every worker (gunicorn starts new ones)."""
            for pid in registry.gunicorn.worker_pids():
                os.kill(pid, signal.SIGKILL)

        cut_and_converge(
            registry,
            relay,
            store,
            url,
            tmp_path / "runs",
            copied,
            kill_workers,
            lambda: None,
            int(CUT_AT * body_size(registry, copied)),
        )
    finally:
        relay.close()


def restart_nginx(registry: Registry) -> None:
    """Start nginx again, with the same configuration on the same port."""
    nginx = registry.nginx
    assert nginx is not None
    binary = nginx_binary()
    assert binary is not None
    prefix = nginx.prefix
    directives = f"daemon off; pid {prefix / 'nginx.pid'}; error_log {prefix / 'error.log'} warn;"
    nginx.process = subprocess.Popen(
        [binary, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", directives],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(nginx.port, nginx.process, "nginx")


@pytest.mark.parametrize("step", ["export", "changes"])
def test_a_body_cut_by_stopping_nginx_is_retried(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    tmp_path: Path,
    step: str,
    nginx_installed: None,
):
    """nginx stopped while the body streams through it: the body ends cut, the copy is
    unchanged, the run keeps trying while nothing answers, and converges once nginx is back."""
    registry = registry_factory(nginx=True)
    assert registry.nginx is not None
    relay = Relay(registry.nginx.port)
    store = store_factory("sqlite")
    try:
        copied = prepare(registry, relay, store, step)
        url = f"http://127.0.0.1:{relay.port}/v1"

        def back_after_failures() -> None:
            """Let the run fail to connect twice more (nothing answers), then start nginx."""
            tried = relay.connections
            wait_for(lambda: relay.connections >= tried + 2, "the run trying while nginx is down")
            restart_nginx(registry)

        cut_and_converge(
            registry,
            relay,
            store,
            url,
            tmp_path / "runs",
            copied,
            registry.nginx.stop,
            back_after_failures,
            NGINX_CUT_BYTES,
        )
    finally:
        relay.close()
