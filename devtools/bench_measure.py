"""Measuring one bench row: wrk's runs, the CPU time they cost, exports and memory.

Each figure comes from wrk's own output or from /proc; devtools.benchmark decides what to
run and devtools.bench_report prints it.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from devtools.production_stack import Gunicorn, nginx_binary, start_nginx

_LATENCY = re.compile(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.M)
_REQUESTS = re.compile(r"^\s+(\d+) requests in ", re.M)
_TICKS = os.sysconf("SC_CLK_TCK")
_ERRORS = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)|Socket errors: (.*)")


def _milliseconds(value: str, unit: str) -> float:
    """wrk's latency figure in milliseconds."""
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def current_etag(url: str, token: str) -> str:
    """The ETag a plain GET of url answers with now."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(answer.headers["ETag"])


def run_wrk(
    url: str,
    token: str,
    seconds: int,
    connections: int,
    script: Path | None = None,
    headers: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One wrk run: requests/s, p50 and p99 in ms, and any errors it saw."""
    extra = [item for header in headers for item in ("-H", header)]
    output = subprocess.run(
        [
            "wrk",
            f"-t{min(2, connections)}",  # wrk wants a connection per thread at least
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            *extra,
            *(["-s", str(script)] if script is not None else []),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    latencies = {p: _milliseconds(v, u) for p, v, u in _LATENCY.findall(output)}
    rate = _RATE.search(output)
    count = _REQUESTS.search(output)
    errors = [m.group(0) for m in _ERRORS.finditer(output)]
    return {
        "requests": int(count.group(1)) if count else 0,
        "rps": float(rate.group(1)) if rate else 0.0,
        "p50": latencies.get("50"),
        "p99": latencies.get("99"),
        "errors": "; ".join(errors),
    }


def _cpu_seconds(pid: int, children: bool = False) -> float:
    """CPU time (user and system) of a process, and of its reaped children when asked."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the name: state is field 3, so utime, stime, cutime, cstime are 14 to 17.
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _TICKS


def app_cpu_seconds(server: Gunicorn) -> float:
    """CPU time of a gunicorn's workers so far: live ones, and those it has reaped
    (max_requests recycles workers; their time moves into the master's children's time)."""
    own = _cpu_seconds(server.process.pid)
    total = _cpu_seconds(server.process.pid, children=True) - own
    return total + sum(_cpu_seconds(pid) for pid in server.worker_pids())


class DatabaseCpu:
    """CPU time so far of the PostgreSQL backends connected to one database (their process
    title names it), counted from the first reading.

    A backend can exit between two readings: gunicorn recycles a worker every max_requests
    and its connection goes with it. Its time then moves into the postmaster's reaped
    children's time, which counts its whole life; so each reading adds the live backends'
    growth since the last one, plus the postmaster's children's growth less what the
    backends that left had already been counted for. (Any other child that exits meanwhile,
    an autovacuum worker say, is counted too: little beside a run's requests.)
    """

    def __init__(self, database: str):
        self._needle = f" {database} ".encode()
        self._seen: dict[int, float] = {}
        self._postmaster: int | None = None
        self._reaped: float | None = None  # None until the postmaster is known
        self._total = 0.0

    def __call__(self) -> float:
        """The total so far, in seconds."""
        now: dict[int, float] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                title = (entry / "cmdline").read_bytes()
                if not (title.startswith(b"postgres: ") and self._needle in title):
                    continue
                if title.startswith(b"postgres: autovacuum"):
                    continue  # the server's own upkeep after a load, not the requests'
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            pid = int(entry.name)
            now[pid] = _cpu_seconds(pid)
            if self._postmaster is None:
                self._postmaster = int(stat[stat.rindex(")") + 2 :].split()[1])
        reaped = None
        if self._postmaster is not None:
            reaped = _cpu_seconds(self._postmaster, children=True)
            reaped -= _cpu_seconds(self._postmaster)
        self._total += sum(spent - self._seen.get(pid, 0.0) for pid, spent in now.items())
        if reaped is not None and self._reaped is not None:
            left = sum(spent for pid, spent in self._seen.items() if pid not in now)
            self._total += reaped - self._reaped - left
        self._seen, self._reaped = now, reaped
        return self._total


def worker_rss_mb(server: Gunicorn) -> list[float]:
    """Resident memory of each gunicorn worker, in MB."""
    sizes = []
    for pid in sorted(server.worker_pids()):
        match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
        if match:
            sizes.append(int(match.group(1)) / 1024)
    return sizes


def full_sweep(base: str, token: str) -> tuple[float, int]:
    """Seconds to read every origin at limit=200, following pages in order."""
    started = time.monotonic()
    seen = 0
    page = 1
    while True:
        request = urllib.request.Request(
            f"{base}/registry/origins?limit=200&page={page}",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = orjson.loads(answer.read())
        seen += body["page"]["returned"]
        if seen >= body["page"]["total"] or not body["origins"]:
            break
        page += 1
    return time.monotonic() - started, seen


def measure(
    url: str,
    token: str,
    seconds: int,
    connections: int,
    script: Path | None = None,
    warm_up: int = 2,
    headers: tuple[str, ...] = (),
    cpu: dict[str, Callable[[], float]] | None = None,
) -> dict[str, Any]:
    """A warm-up (2 s: every worker), then the measured run, with the CPU time it cost each
    process group of cpu (name -> reading of CPU seconds) per request, in ms."""
    run_wrk(url, token, warm_up, connections, script, headers)
    before = {name: read() for name, read in (cpu or {}).items()}
    result = run_wrk(url, token, seconds, connections, script, headers)
    for name, read in (cpu or {}).items():
        spent = read() - before[name]
        result[f"{name}_ms"] = 1000 * spent / result["requests"] if result["requests"] else None
    return result


def export_run(url: str, token: str, accept: str, server: Gunicorn) -> dict[str, Any]:
    """One full export read as fast as possible: seconds, first byte, size, lines, peak RSS."""
    peak: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        """The largest resident size of each worker while the export runs."""
        while not done.is_set():
            for pid in server.worker_pids():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                match = re.search(r"VmRSS:\s+(\d+) kB", status)
                if match:
                    peak[pid] = max(peak.get(pid, 0.0), int(match.group(1)) / 1024)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Accept": accept}
    )
    started = time.monotonic()
    size = lines = 0
    first_byte = None
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            while chunk := answer.read1(1 << 20):
                if first_byte is None:
                    first_byte = time.monotonic() - started
                size += len(chunk)
                lines += chunk.count(b"\n")
        seconds = time.monotonic() - started
    finally:
        done.set()
        sampler.join()
    # NDJSON: one line per origin; CSV: a header row first (names with newlines aside).
    origins = lines if accept == "application/x-ndjson" else lines - 1
    return {
        "seconds": seconds,
        "first_byte_ms": (first_byte or 0.0) * 1000,
        "mb": size / 1e6,
        "origins": origins,
        "peak_rss_mb": max(peak.values(), default=0.0),
    }


def run_exports(
    server: Gunicorn, token: str, folder: Path, demo_generation: int | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Full NDJSON and CSV exports, direct and (when nginx is installed) through nginx; then
    the change set of demo_generation (the bench's first load: every origin added)."""
    bases = [("gunicorn", server.base)]
    proxy = None
    if nginx_binary() is not None:
        proxy = start_nginx(folder / "nginx", server.port, worker_processes="1")
        bases.append(("nginx", proxy.base))
    results = []
    try:
        for where, base in bases:
            for accept, label in (("application/x-ndjson", "NDJSON"), ("text/csv", "CSV")):
                result = export_run(f"{base}/registry/origins", token, accept, server)
                results.append((f"{label} via {where}", result))
                print(f"  export {label} via {where}: {result['seconds']:.1f} s", flush=True)
        # docs/api.md, Changes between generations: the demo's change set, every origin added (kept
        # beside its twin), as NDJSON: one line per change.
        if demo_generation is not None:
            url = f"{server.base}/registry/changes?generation={demo_generation}"
            result = export_run(url, token, "application/x-ndjson", server)
            results.append(("changes NDJSON (the demo's: all added) via gunicorn", result))
            print(f"  export changes NDJSON: {result['seconds']:.1f} s", flush=True)
    finally:
        if proxy is not None:
            proxy.stop()
    return results
