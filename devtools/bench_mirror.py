"""What `registry mirror` costs (docs/mirror.md), in scratch databases of its own.

python -m devtools.bench_mirror --origins 1000000 [--missed 10] [--polls 200] [--attach DATABASE]

The demo is loaded and served by the production gunicorn set-up; then, in one run:

- the first sync into SQLite and into PostgreSQL, each beside the same NDJSON export read by
  curl into /dev/null (the best of three curl runs, taken before and after), as a ratio;
  the mirror's peak resident size (its high-water mark, from /proc);
- a twin of 1 % of the origins is loaded (the twin generator of `registry demo --changes`,
  as in devtools.bench_since), and one step of each copy applies it;
- an unchanged poll: the step `--follow` takes when nothing was loaded (a 304), timed in
  this process over --polls runs, p50 and p99;
- --missed further twins are loaded while the copies wait, then one step each, beside the
  bytes and time of the export it replaces (the newest generation, by curl);
- `registry mirror verify` of each whole copy, against the service too.

With --attach DATABASE, nothing is loaded here: the bench serves a database that another run
is loading (make bench-since's chain of the same twins, say) and waits for its loads instead
of making them, so the mirror steps while loads land, as a consumer's does, and the two
benches share one chain of loads.

Nothing asserts: it reports. The databases and files are dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import nullcontext
from pathlib import Path

from devtools.bench_changes import REPO, load, scratch_database
from devtools.bench_since import served, twin_fractions
from devtools.bench_targets import demo_document, twin_document
from devtools.production_stack import Gunicorn
from registry.database.conninfo import as_url, resolve_database_url, with_database
from registry.mirror.client import Client
from registry.mirror.progress import progress_for
from registry.mirror.steps import Step
from registry.mirror.stores import open_store
from registry.settings import load_settings

CURL_RUNS = 2


def curl_export(server: Gunicorn, token: str, path: str = "/registry/origins") -> tuple[float, int]:
    """An NDJSON export (the newest generation's, unless path says) read by curl into
    /dev/null: seconds, bytes."""
    done = subprocess.run(
        ["curl", "-s", "-f", "-o", "/dev/null", "-w", "%{time_total} %{size_download}",
         "-H", f"Authorization: Bearer {token}", "-H", "Accept: application/x-ndjson",
         f"{server.base}{path}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    seconds, size = done.stdout.split()
    return float(seconds), int(size)


def best_curl(server: Gunicorn, token: str) -> tuple[float, int]:
    """The fastest of CURL_RUNS exports."""
    return min(curl_export(server, token) for _ in range(CURL_RUNS))


def high_water_mb(pid: int) -> float | None:
    """The process's peak resident size so far (VmHWM), in MB; None once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def mirror(args: list[str], token: str) -> tuple[float, float, str]:
    """`registry mirror ...` in a process of its own: seconds, peak RSS in MB, its last line.

    The peak is the process's high-water mark, read from /proc while it runs (wait4's figure
    would count the image of this process, which the child is forked from)."""
    env = {**os.environ, "REGISTRY_TOKEN": token, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "registry.cli", "mirror", *args],
            cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
        peak = 0.0
        while process.poll() is None:
            peak = max(peak, high_water_mb(process.pid) or 0.0)
            time.sleep(0.02)
        seconds = time.monotonic() - started
        output.seek(0)
        text = output.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"registry mirror {' '.join(args)} exited {process.returncode}:\n{text}")
    return seconds, peak, text.strip().splitlines()[-1]


def unchanged_polls(url: str, target: str, token: str, polls: int) -> list[float]:
    """The step --follow takes when nothing was loaded, timed in this process (ms)."""
    store = open_store(target, create=False)
    assert store is not None
    client = Client(url, token)
    step = Step(client, store, url, lambda _line: None, progress_for(sys.stderr), threading.Event())
    try:
        step.run(False)  # the connection is open from here on, as in --follow
        times = []
        for _ in range(polls):
            started = time.perf_counter()
            step.run(False)
            times.append(1000 * (time.perf_counter() - started))
        return sorted(times)
    finally:
        client.close()
        store.close()


def live_generation(server: Gunicorn, token: str) -> int:
    """The generation the service answers with now."""
    request = urllib.request.Request(
        f"{server.base}/registry/summary", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(answer.headers["Registry-Generation"])


class Chain:
    """Where the loads come from: this bench's own (the demo, then twins loaded in turn), or,
    with --attach, the loads of another run into that database (make bench-since's chain,
    say), waited for: the mirror then steps while that run loads, as a consumer does."""

    def __init__(self, args: argparse.Namespace, conninfo: str):
        self.attached = args.attach is not None
        self.conninfo = conninfo
        cache = Path(args.cache)
        fractions = twin_fractions(1 + args.missed)
        self.twins = [] if self.attached else [
            twin_document(args.origins, args.seed, cache, f) for f in fractions
        ]  # fmt: skip
        self.loaded = 0

    def advance(self, count: int, server: Gunicorn, token: str) -> None:
        """count more generations: loaded here, or waited for."""
        if self.attached:
            goal = live_generation(server, token) + count
            while (now := live_generation(server, token)) < goal:
                time.sleep(1)
            print(f"generation {now} landed", flush=True)
            return
        for path in self.twins[self.loaded : self.loaded + count]:
            print(f"twin {self.loaded + 1}: {path.name}", flush=True)
            load(REPO, self.conninfo, path)
            self.loaded += 1


def main(argv: list[str] | None = None) -> int:
    """Load (or wait for loads), sync, step, verify; print each figure."""
    parser = argparse.ArgumentParser(prog="python -m devtools.bench_mirror")
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--missed", type=int, default=10)
    parser.add_argument("--polls", type=int, default=200)
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    parser.add_argument(
        "--attach", metavar="DATABASE", help="a database another run is loading: no loads here"
    )
    args = parser.parse_args(argv)
    server = resolve_database_url(load_settings())
    with (
        nullcontext(with_database(server, args.attach))
        if args.attach
        else scratch_database(server, f"registry_bench_mirror_{args.origins}") as conninfo,
        scratch_database(server, f"registry_bench_mirror_copy_{args.origins}") as copy_db,
        tempfile.TemporaryDirectory(prefix="registry-bench-mirror-") as folder,
    ):
        chain = Chain(args, conninfo)
        if not chain.attached:
            demo = demo_document(args.origins, args.seed, Path(args.cache))
            print(f"demo: {demo.name}", flush=True)
            load(REPO, conninfo, demo)
        sqlite = str(Path(folder) / "copy.sqlite")
        copies = {"SQLite": sqlite, "PostgreSQL": as_url(copy_db)}
        with served(conninfo) as (stack, token):
            measure(args, chain, stack, token, copies)
    return 0


def measure(
    args: argparse.Namespace, chain: Chain, stack: Gunicorn, token: str, copies: dict[str, str]
) -> None:
    """The rows, in order."""
    url = stack.base

    def sync(target: str) -> tuple[float, float, str]:
        return mirror(["sync", "--url", url, "--into", target], token)

    for store, target in copies.items():
        before = best_curl(stack, token)
        seconds, rss, line = sync(target)
        after = best_curl(stack, token)
        curl = min(before, after)
        print(f"first sync into {store}: {seconds:.1f} s, {seconds / curl[0]:.2f}x the "
              f"export read by curl ({curl[0]:.1f} s, {curl[1] / 1e6:.0f} MB); "
              f"peak RSS {rss:.0f} MB; {line}", flush=True)  # fmt: skip
    if chain.attached:
        for target in copies.values():  # both at the same generation before the steps
            print(f"  {sync(target)[2]}", flush=True)
    chain.advance(1, stack, token)
    for store, target in copies.items():
        seconds, rss, line = sync(target)
        print(f"a step of one 1 % twin, {store}: {seconds:.2f} s (the whole process; "
              f"peak RSS {rss:.0f} MB); {line}", flush=True)  # fmt: skip
    for store, target in copies.items():
        times = unchanged_polls(url, target, token, args.polls)
        p50, p99 = times[len(times) // 2], times[int(len(times) * 0.99) - 1]
        print(f"an unchanged poll, {store}: p50 {p50:.1f} ms, p99 {p99:.1f} ms "
              f"({args.polls} polls)", flush=True)  # fmt: skip
    _, _, status = mirror(["status", "--into", copies["SQLite"]], token)
    since = json.loads(status)["generation"]
    chain.advance(args.missed, stack, token)
    export = best_curl(stack, token)
    changes = min(
        curl_export(stack, token, f"/registry/changes?since={since}") for _ in range(CURL_RUNS)
    )
    print(f"since={since} by curl: {changes[0]:.2f} s, {changes[1] / 1e6:.1f} MB; the "
          f"export: {export[0]:.1f} s, {export[1] / 1e6:.0f} MB", flush=True)  # fmt: skip
    for store, target in copies.items():
        seconds, rss, line = sync(target)
        print(f"one step after {args.missed} missed loads, {store}: {seconds:.2f} s "
              f"beside the export it replaces ({export[0]:.1f} s, "
              f"{export[1] / 1e6:.0f} MB); {line}", flush=True)  # fmt: skip
    for store, target in copies.items():
        seconds, rss, line = mirror(["verify", "--into", target, "--url", url], token)
        print(f"verify, {store}: {seconds:.1f} s (peak RSS {rss:.0f} MB); {line}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
