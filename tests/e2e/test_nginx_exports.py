"""Exports through deploy/nginx.conf as shipped: nginx decides the representation of a
listing (docs/export.md), as the app would, and sends the app only its decision, so its export
limit per client counts exactly what the app streams, whatever the Accept header or headers;
an export cut half-way with spooling as shipped still ends without its last chunk; and, with
every timeout as shipped, throttled readers (a pause just under the send timeout after a
burst, as curl --limit-rate does; 10 KB/s for longer than nginx's send_timeout) get whole
exports, direct and through nginx (docs/export.md, "Throttled clients"). The cut and the
throttled readers are tried on every export: the origins, the live generation's changes and
the net changes since an earlier generation (docs/api.md).
"""

from __future__ import annotations

import io
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pytest

from devtools.production_stack import (
    NGINX_SITE,
    REPO,
    Gunicorn,
    Nginx,
    start_gunicorn,
    start_nginx,
)
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.settings import DEFAULTS
from tests.conftest import TEST_SECRET, load_records, make_token
from tests.e2e.raw_http import Answer, raw_request, request
from tests.e2e.slow_client import Body, SlowClient

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]

# About 8.7 MB of NDJSON: far more than nginx can push into the sockets ahead of a client
# that does not read (a 64 KB window and nginx's send buffer of 512 KB), so a held export
# stays open, and a reader that pauses after a 1 MB burst leaves most of it waiting.
ORIGINS = 10_000
# The graphs loaded before the live one (the demo of ORIGINS): EARLIER_ORIGINS other origins,
# then the demo's twin with every origin's fate drawn (docs: `registry demo --changes 1`).
# The live change set undoes the twin: 2,500 origins added, 2,500 removed and 5,000 changed,
# each with its before and after (about 14 MB of NDJSON); since the first generation, the
# earlier origins removed and every live one added (about 10 MB). Each is as far past the
# buffers as the origins export.
EARLIER_ORIGINS = 2_000
TWIN_FRACTION = 1.0
# Three exports held direct by bursty readers (one worker each) and one worker left to
# stream the exports that nginx spools.
WORKERS = 4
ADMIN = {"Authorization": f"Bearer {make_token()}"}
NDJSON = {**ADMIN, "Accept": "application/x-ndjson"}
JSON_TYPE, NDJSON_TYPE, CSV_TYPE = "application/json", "application/x-ndjson", "text/csv"
# A listing that matches nothing: small answers in every representation.
EMPTY = "/registry/origins?search=zzqqxx-matches-nothing"
# The send timeout docs/export.md documents: an export whose client takes nothing for this
# long is cut, direct (REGISTRY_EXPORT_SEND_TIMEOUT_S) and through nginx (send_timeout).
SEND_TIMEOUT_S = 120
# What a bursty reader takes before it pauses: less than a held export leaves unsent.
BURST = 1 << 20
# The streamed exports: the origins, the live generation's change set, and the net changes
# since the first generation (the target of each is in Stack.exports).
EXPORTS = ("origins", "changes", "changes since")


@dataclass
class Stack:
    """gunicorn over ORIGINS origins; nginx as shipped (limits and all) in front of it, and
    one with the request rate lifted for the tests that send many requests; each export's
    target (without the /v1 prefix) and its rows."""

    gunicorn: Gunicorn
    nginx: Nginx
    lifted: Nginx
    exports: dict[str, str]
    totals: dict[str, int]


def written(write: Callable[[BinaryIO], object]) -> bytes:
    """What write wrote."""
    buffer = io.BytesIO()
    write(buffer)
    return buffer.getvalue()


def export_targets(port: int) -> dict[str, str]:
    """The target of each export in EXPORTS; since the oldest generation kept."""
    listed = request(port, "/registry/generations", headers=ADMIN).json()
    first = min(row["generation"] for row in listed["generations"])
    return dict(
        zip(
            EXPORTS,
            ("/registry/origins", "/registry/changes", f"/registry/changes?since={first}"),
            strict=True,
        )
    )


def rows_of(port: int, target: str) -> int:
    """The rows an export of target sends: the JSON page's total of the same URL."""
    page = f"{target}{'&' if '?' in target else '?'}limit=1"
    return int(request(port, page, headers=ADMIN).json()["page"]["total"])


@pytest.fixture(scope="module")
def stack(
    database_factory: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """The earlier graphs and the demo graph loaded, gunicorn with its default timeouts, and
    nginx in front."""
    conninfo = database_factory()
    for document in (
        written(lambda file: write_demo_document(file, EARLIER_ORIGINS, 4)),
        written(lambda file: write_twin_document(file, ORIGINS, 5, TWIN_FRACTION)),
        written(lambda file: write_demo_document(file, ORIGINS, 5)),
    ):
        load_records(conninfo, document)
    folder = tmp_path_factory.mktemp("nginx-exports")
    # As many exports at once as workers: this instance's own limit (tests of their own)
    # never answers before nginx's.
    server = start_gunicorn(
        {
            "DATABASE_URL": conninfo,
            "REGISTRY_JWT_SECRET": TEST_SECRET,
            "REGISTRY_MAX_EXPORTS": str(WORKERS),
        },
        folder / "gunicorn.log",
        workers=WORKERS,
    )
    proxies: list[Nginx] = []
    try:
        proxies.append(start_nginx(folder / "shipped", server.port, limits=None))
        proxies.append(start_nginx(folder / "lifted", server.port))
        exports = export_targets(server.port)
        totals = {name: rows_of(server.port, target) for name, target in exports.items()}
        assert totals["origins"] == ORIGINS
        yield Stack(server, proxies[0], proxies[1], exports, totals)
    finally:
        for proxy in proxies:
            proxy.stop()
        server.stop()


def media_type(answer: Answer) -> str:
    """The answer's media type, without parameters."""
    return (answer.header("Content-Type") or "").split(";")[0]


# docs/export.md: absent, */*, application/*, application/json are JSON; q-values are honoured;
# an Accept that admits none of the three is a 406.
NEGOTIATION = [
    (None, JSON_TYPE),
    ("*/*", JSON_TYPE),
    ("application/*", JSON_TYPE),
    ("application/json", JSON_TYPE),
    ("application/x-ndjson", NDJSON_TYPE),
    ("text/csv", CSV_TYPE),
    ("TEXT/CSV", CSV_TYPE),
    ("text/*", CSV_TYPE),
    ("*/*, application/json;q=0", NDJSON_TYPE),
    ("application/*, application/json;q=0", NDJSON_TYPE),
    ("*/*;q=0.1, application/json;q=0, application/x-ndjson;q=0", CSV_TYPE),
    ("application/json;q=0.5, text/csv;q=0.9", CSV_TYPE),
    ("application/json;q=0.9, text/csv;q=0.5", JSON_TYPE),
    ("application/x-ndjson;q=0.8, text/csv ; q=0.85", CSV_TYPE),
    ("application/json;q=0.5, application/x-ndjson;q=0.5", JSON_TYPE),
    ("*/*;q=0.5, text/csv;q=0.5", CSV_TYPE),
    ("text/csv;q=0, */*", JSON_TYPE),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", JSON_TYPE),
    ("text/html", None),
    ("*/*;q=0", None),
    ("application/json;q=0, application/x-ndjson;q=0, text/csv;q=0", None),
    ("application/json;charset=utf-8", None),
    ("application/json;q=0.", None),
]


@pytest.mark.parametrize(("accept", "expected"), NEGOTIATION)
def test_nginx_negotiates_as_the_contract_says(
    stack: Stack, accept: str | None, expected: str | None
):
    """Through nginx the representation is docs/export.md, and the same as direct."""
    headers = dict(ADMIN) if accept is None else {**ADMIN, "Accept": accept}
    proxied = request(stack.lifted.port, "/v1" + EMPTY, headers=headers)
    direct = request(stack.gunicorn.port, EMPTY, headers=headers)
    if expected is None:
        assert proxied.status == direct.status == 406
        assert proxied.json() == {"success": False, "error": "Not Acceptable"}
    else:
        assert proxied.status == direct.status == 200
        assert media_type(proxied) == media_type(direct) == expected
    assert "Accept" in (proxied.header("Vary") or "")


def random_accepts(count: int) -> list[str]:
    """Accept headers of up to four ranges (each named once), with q-values of every form."""
    ranges = [
        "application/json",
        "application/x-ndjson",
        "text/csv",
        "text/*",
        "application/*",
        "*/*",
        "text/html",
        "application/xml",
    ]
    qualities = ["", ";q=0", ";q=1", ";q=1.0", ";q=0.5", ";q=0.50", ";q=0.25", ";q=0.001"]
    qualities += [";q=0.9", ";q=0.000", " ; q=0.5", ";Q=0.3", ";q=0.333", ";q=1."]
    draw = random.Random(34)
    return [
        ", ".join(name + draw.choice(qualities) for name in draw.sample(ranges, draw.randint(1, 4)))
        for _ in range(count)
    ]


def test_nginx_picks_what_the_app_would_for_any_accept(stack: Stack):
    """Many Accept headers: nginx's decision (the one Accept it sends on) is always the one
    the app makes of the client's own header."""
    differ = []
    for accept in random_accepts(150):
        headers = {**ADMIN, "Accept": accept}
        proxied = request(stack.lifted.port, "/v1" + EMPTY, headers=headers)
        direct = request(stack.gunicorn.port, EMPTY, headers=headers)
        if (proxied.status, media_type(proxied)) != (direct.status, media_type(direct)):
            differ.append((accept, direct.status, media_type(direct), proxied.status))
    assert differ == []


# Accept headers that the app streams as an export, and that nginx once let through uncounted.
BYPASSES = [
    ("*/*, application/json;q=0", NDJSON_TYPE),
    ("application/*, application/json;q=0", NDJSON_TYPE),
    ("application/json;q=0, */*;q=0.5", NDJSON_TYPE),
    ("text/*", CSV_TYPE),
    ("text/*;q=0.9, application/json;q=0.5", CSV_TYPE),
    ("*/*;q=0.1, application/json;q=0, application/x-ndjson;q=0", CSV_TYPE),
]


def two_accept_lines(port: int, target: str, first: str, second: str) -> Answer:
    """One GET with two Accept lines, sent as they are."""
    lines = [
        f"GET {target} HTTP/1.1",
        "Host: 127.0.0.1",
        "Connection: close",
        f"Authorization: {ADMIN['Authorization']}",
        f"Accept: {first}",
        f"Accept: {second}",
    ]
    return raw_request(port, ("\r\n".join(lines) + "\r\n\r\n").encode())


def test_every_export_counts_against_the_nginx_limit_whatever_accept_says(stack: Stack):
    """A client holding as many exports as nginx allows it (2, as shipped) gets nginx's 429
    for every further export, however its Accept header or headers are written; a request
    that nginx lets through is never streamed."""
    for accept, streamed in BYPASSES:
        direct = request(stack.gunicorn.port, EMPTY, headers={**ADMIN, "Accept": accept})
        assert media_type(direct) == streamed, accept
    held = [SlowClient(stack.nginx.port, "/v1/registry/origins", NDJSON) for _ in range(2)]
    try:
        assert [client.status for client in held] == [200, 200]
        for accept, _ in BYPASSES:
            answer = request(
                stack.nginx.port, "/v1/registry/origins", headers={**ADMIN, "Accept": accept}
            )
            assert (answer.status, answer.body) == (
                429,
                b'{"success":false,"error":"Too Many Requests"}',
            ), accept
            assert answer.header("Retry-After") is not None
        # Two Accept lines: gunicorn would join them; nginx decides on its own reading and
        # sends only its decision on. An export is counted, anything else is not streamed.
        both = two_accept_lines(stack.nginx.port, "/v1/registry/origins", "text/*", "*/*;q=0.1")
        assert both.status == 429
        both = two_accept_lines(
            stack.nginx.port, "/v1/registry/origins", "application/json;q=0.1", "text/csv"
        )
        assert (both.status, media_type(both)) == (200, JSON_TYPE)
        assert both.json()["success"] is True
        # Pages still pass while the exports are held.
        page = request(stack.nginx.port, "/v1/registry/origins?limit=1", headers=ADMIN)
        assert (page.status, media_type(page)) == (200, JSON_TYPE)
    finally:
        for client in held:
            client.reset()


def loopback_queues(port: int) -> list[tuple[int, int, int]]:
    """The established TCP sockets on 127.0.0.1 with port at either end: (local port, remote
    port, bytes waiting in the receive queue), from /proc/net/tcp."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        local_port, remote_port = int(local.split(":")[1], 16), int(remote.split(":")[1], 16)
        if state == "01" and port in (local_port, remote_port):
            found.append((local_port, remote_port, int(fields[4].split(":")[1], 16)))
    return found


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    """Poll until condition holds; fail saying what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"within {seconds} s: {what}")
        time.sleep(0.02)


def signal_all(pids: set[int], signum: int) -> None:
    """Send signum to each process."""
    for pid in pids:
        os.kill(pid, signum)


def every_worker_up(server: Gunicorn) -> set[int]:
    """Wait until gunicorn runs WORKERS workers, none of them a killed one not yet reaped;
    their process ids."""
    found: set[int] = set()

    def up() -> bool:
        """Whether every worker now listed is alive."""
        found.clear()
        for pid in server.worker_pids():
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                return False
            if state in ("Z", "X"):
                return False
            found.add(pid)
        return len(found) == WORKERS

    wait_for(up, f"gunicorn's {WORKERS} workers running", seconds=60)
    return set(found)


@pytest.mark.parametrize("export", EXPORTS)
def test_an_export_cut_half_way_through_nginx_as_shipped_never_looks_complete(
    stack: Stack, export: str
):
    """Spooling as shipped: nginx takes an export from the worker as fast as the worker
    writes, so to cut one half-way the worker is held mid-export: nginx is paused (SIGSTOP)
    once the request is with gunicorn, the worker writes its first rows into the socket, and
    is killed. nginx, resumed, passes on what it got and then ends the answer without its
    last chunk: the client sees fewer rows than Registry-Total and no terminating chunk."""
    nginx_workers = {
        int(pid)
        for pid in Path(f"/proc/{stack.nginx.process.pid}/task/{stack.nginx.process.pid}/children")
        .read_text()
        .split()
    }
    # Every worker up (the case before killed them all), so that the SIGSTOP below holds
    # each one that could take the request.
    gunicorn_workers = every_worker_up(stack.gunicorn)
    port = stack.gunicorn.port
    clients: list[SlowClient] = []
    signal_all(gunicorn_workers, signal.SIGSTOP)
    try:
        opening = threading.Thread(
            target=lambda: clients.append(
                SlowClient(stack.nginx.port, "/v1" + stack.exports[export], NDJSON)
            )
        )
        opening.start()
        # The request is with gunicorn (queued on a connection no worker took yet)...
        wait_for(
            lambda: any(local == port and queued for local, _, queued in loopback_queues(port)),
            "nginx's request waiting at gunicorn",
        )
        signal_all(nginx_workers, signal.SIGSTOP)
    finally:
        signal_all(gunicorn_workers, signal.SIGCONT)
    try:
        # ... and the worker has written the answer's head and first rows to nginx.
        wait_for(
            lambda: any(remote == port and queued for _, remote, queued in loopback_queues(port)),
            "the export's first bytes waiting at nginx",
        )
        signal_all(gunicorn_workers, signal.SIGKILL)
    finally:
        signal_all(nginx_workers, signal.SIGCONT)
    opening.join(timeout=30)
    (client,) = clients
    assert client.status == 200
    total = int(client.head["registry-total"])
    body = client.read_rest()
    assert not body.complete
    assert 0 < len(body.lines()) < total == stack.totals[export]
    wait_for(
        lambda: request(port, "/registry/summary", headers=ADMIN).status == 200,
        "gunicorn answering again with new workers",
        seconds=60,
    )


def shipped_timeouts() -> dict[str, float]:
    """The export send timeout, gunicorn's worker timeout and nginx's timeouts as shipped."""
    site = NGINX_SITE.read_text()
    found = {
        name: float(re.search(rf"^\s*{name} (\d+)s;", site, re.M).group(1))  # type: ignore[union-attr]
        for name in ("send_timeout", "proxy_read_timeout")
    }
    # gunicorn.conf.py takes its worker timeout's default from registry/settings.py.
    gunicorn = (REPO / "gunicorn.conf.py").read_text()
    assert '_settings.DEFAULTS["REGISTRY_GUNICORN_TIMEOUT"]' in gunicorn
    found["worker"] = float(DEFAULTS["REGISTRY_GUNICORN_TIMEOUT"])
    found["export"] = float(DEFAULTS["REGISTRY_EXPORT_SEND_TIMEOUT_S"])
    return found


def test_the_shipped_timeouts_are_the_documented_ones():
    """docs/export.md, "Throttled clients": 120 s without data before an export is cut, direct
    and through nginx; gunicorn's worker timeout above it and nginx's read timeout above that."""
    timeouts = shipped_timeouts()
    assert timeouts["export"] == timeouts["send_timeout"] == SEND_TIMEOUT_S
    assert timeouts["export"] < timeouts["worker"] < timeouts["proxy_read_timeout"]


def read_in_bursts(client: SlowClient, pause: float) -> None:
    """Take 1 MB at full speed, then nothing for pause seconds, as curl --limit-rate 10k does
    (docs/export.md, "Throttled clients")."""
    taken = 0
    while taken < BURST:
        chunk = client.sock.recv(65536)
        if not chunk:
            return
        client.raw += chunk
        taken += len(chunk)
    time.sleep(pause)


# Each export's two readers through nginx come from a loopback address of their own, so that
# nginx's limit per client address as shipped (2 exports at once) admits all six.
SOURCES = {"origins": "127.0.0.2", "changes": "127.0.0.3", "changes since": "127.0.0.4"}


def test_throttled_readers_get_whole_exports_under_the_shipped_timeouts(stack: Stack):
    """With every timeout as shipped, for every export at once (side by side rather than one
    case each: each case lasts longer than the send timeout): a reader that stops for just
    under the send timeout after a burst, direct and through nginx, and a reader at 10 KB/s
    through nginx for longer than nginx's send_timeout (and at least 60 s): each export is
    complete."""
    steady_seconds = max(60, SEND_TIMEOUT_S + 5)
    plans: dict[str, Callable[[SlowClient], None]] = {
        "bursty, direct": lambda client: read_in_bursts(client, SEND_TIMEOUT_S - 5),
        "bursty, nginx": lambda client: read_in_bursts(client, SEND_TIMEOUT_S - 5),
        "10 KB/s, nginx": lambda client: client.read_for(steady_seconds),
    }
    # The direct readers first: each export holds its worker until its reader takes more, and
    # the exports through nginx are then spooled, one after another, by the worker left.
    clients: dict[tuple[str, str], SlowClient] = {}
    for export, target in stack.exports.items():
        clients[export, "bursty, direct"] = SlowClient(stack.gunicorn.port, target, NDJSON)
    for export, target in stack.exports.items():
        for plan in ("bursty, nginx", "10 KB/s, nginx"):
            clients[export, plan] = SlowClient(
                stack.nginx.port, "/v1" + target, NDJSON, source=SOURCES[export]
            )
    open_after_plan: dict[tuple[str, str], bool] = {}
    bodies: dict[tuple[str, str], Body] = {}

    def run(key: tuple[str, str]) -> None:
        """The reader's plan, then the rest at full speed."""
        client = clients[key]
        plans[key[1]](client)
        open_after_plan[key] = not client.body().complete
        bodies[key] = client.read_rest()

    for client in clients.values():
        assert client.status == 200
        # The reader's own timeout must outlast its pauses.
        client.sock.settimeout(SEND_TIMEOUT_S * 2)
    started = time.monotonic()
    readers = [threading.Thread(target=run, args=(key,)) for key in clients]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    totals = {key: int(client.head["registry-total"]) for key, client in clients.items()}
    assert totals == {key: stack.totals[key[0]] for key in clients}
    # Per reader: still open after its pause or slow reading (the server waited on it), then
    # complete, every row.
    outcome = {
        key: (open_after_plan[key], body.complete, len(body.lines()))
        for key, body in bodies.items()
    }
    assert outcome == {key: (True, True, stack.totals[key[0]]) for key in clients}
    assert time.monotonic() - started >= steady_seconds
