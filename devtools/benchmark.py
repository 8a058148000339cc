"""`make bench`: the service at scale, measured with wrk through the production gunicorn set-up.

python -m devtools.benchmark --origins 100000 [--only search,search-mix] [--connections 16,64]

Generates a demo graph of that size once (cached under .bench/), loads it into a database of
its own (skipped when that database already holds it), serves it with gunicorn.conf.py,
drives each URL with wrk (2 threads, 16 connections, 10 s), times a full sweep at limit=200,
and prints one table. Beside the service, a minimal Flask app (devtools/ceiling_app.py) runs
through the same gunicorn.conf.py; it is measured just before each row, and each row's rate
is reported as a ratio to it, which stays put while the shared machine's speed moves. The
search mix drives 200 distinct terms drawn from the graph's names and registry ids through
a wrk Lua script. It also times full exports (NDJSON and CSV, straight to gunicorn and
through deploy/nginx.conf) with the workers' peak memory meanwhile. Nothing here asserts:
it reports. `--exports-only` skips wrk and the sweep.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from devtools.production_stack import Gunicorn, nginx_binary, start_gunicorn, start_nginx
from registry.database.conninfo import resolve_database_url, with_database
from registry.database.queries import QUERIES
from registry.loader.demo import write_demo_document
from registry.loader.loading import GRAPH_FORMAT, load_counts_line, load_document
from registry.settings import load_settings
from registry.tokens.development import mint_token

REPO = Path(__file__).resolve().parent.parent


def demo_document(origins: int, seed: int, cache: Path) -> Path:
    """The demo graph document of this size, generated once into the cache folder."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"demo-{origins}-{seed}.jsonl"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as out:
            write_demo_document(out, origins=origins, seed=seed)
        partial.rename(path)
    return path


def prepare_database(origins: int, seed: int, cache: Path) -> str:
    """A database holding the demo graph of this size; generated and loaded only once."""
    server = resolve_database_url(load_settings())
    # The load SQL's fingerprint in the name: branches with different read models can bench
    # on one server without reloading each other's graph.
    name = f"registry_bench_{origins}_{seed}_{GRAPH_FORMAT[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        exists = conn.execute(QUERIES["meta/database_exists"], {"name": name}).fetchone()
        if not (exists and exists[0]):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    conninfo = with_database(server, name)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        try:
            row = conn.execute(QUERIES["meta/get_graph_format"]).fetchone()
            loaded = row is not None and tuple(row) == (GRAPH_FORMAT, origins)
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
            loaded = False
        if not loaded:
            path = demo_document(origins, seed, cache)
            print(f"loading {path.name} ...", flush=True)
            with open(path, "rb") as stream:
                print(load_counts_line(load_document(conn, stream)), flush=True)
    return conninfo


def pick_targets(conninfo: str) -> dict[str, Any]:
    """Ids, an address and the largest network of the loaded graph, for the URLs."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(QUERIES["meta/pick_benchmark_targets"]).fetchone()
    assert row is not None
    origin_id, address, network_id, total = row
    return {"origin_id": origin_id, "address": address, "network_id": network_id, "total": total}


def urls(targets: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, label, path) of every single URL the benchmark drives."""
    last_page = max(1, -(-int(targets["total"]) // 200))
    flags = "governance_state=governed&transport=ota"
    last = f"limit=200&page={last_page}"
    network = urllib.parse.quote(str(targets["network_id"]), safe="")
    return [
        ("summary", "/summary", "/summary"),
        ("ceiling-query", CEILING_QUERY_LABEL, "/query"),
        ("registry-summary", "/registry/summary", "/registry/summary"),
        ("first-page", "origins (first page, limit 50)", "/registry/origins"),
        ("limit-200", "origins limit=200", "/registry/origins?limit=200"),
        ("last-page", "origins last page, limit=200", f"/registry/origins?{last}"),
        ("flags", "governed + transport=ota", f"/registry/origins?{flags}"),
        ("search", "search=news", "/registry/origins?search=news"),
        ("network", "network_id=<largest>", f"/registry/origins?network_id={network}"),
        ("by-id", "origin by id", f"/registry/origins/{targets['origin_id']}"),
        ("by-address", "origin by address", f"/registry/addresses/{targets['address']}"),
        ("metrics", METRICS_LABEL, "/metrics"),
    ]  # fmt: skip


# Rows whose URL clients do not reach through nginx: the ceiling app's, and /metrics, which
# deploy/nginx.conf answers 404 (Prometheus scrapes gunicorn directly). `make bench` drives
# them where they are served; the load and fault tests through nginx leave them out.
NOT_THROUGH_NGINX = frozenset({"ceiling-query", "metrics"})


def public_urls(targets: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The URLs of urls() that clients reach through nginx: what load and fault tests drive."""
    return [row for row in urls(targets) if row[0] not in NOT_THROUGH_NGINX]


ROW_KEYS = (
    "ceiling", "ceiling-query", "summary", "registry-summary", "first-page", "limit-200",
    "last-page", "flags", "search", "search-mix", "network", "by-id", "by-address", "metrics",
)  # fmt: skip
# A scrape is one request at a time (Prometheus never overlaps its own): that row runs at one
# connection whatever --connections says, after every other row has filled the workers'
# metric files, and reads as the time one scrape takes with every worker's series in them.
METRICS_LABEL = "/metrics (one scraper)"
# The ceiling app answering after one round trip to PostgreSQL (the statement a 304 runs):
# the least any answer that asks the database once can cost, beside the ceiling itself.
CEILING_QUERY_LABEL = "ceiling + one query"
MIX_TERMS = 200
MIX_FREQUENT = 10
MIX_NOTHING = 20
MIX_REGISTRY_IDS = 50


def _spread(items: list[str], count: int) -> list[str]:
    """count items evenly spaced through items (the first and the last among them)."""
    if count <= 0 or not items:
        return []
    if count >= len(items):
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def search_terms(conninfo: str, count: int = MIX_TERMS) -> list[str]:
    """count distinct search terms from the graph's names and registry ids.

    The 10 most frequent name words, then words spread down to the rarest, registry ids
    spread from the most to the least shared, and terms that match nothing.
    """
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(QUERIES["meta/pick_search_terms"]).fetchall()
    words = [term for kind, term, _ in rows if kind == "word"]
    registry_ids = [term for kind, term, _ in rows if kind == "registry_id"]
    nothing = [f"zq{index:02d}xj" for index in range(MIX_NOTHING)]
    frequent = words[:MIX_FREQUENT]
    ids = _spread(registry_ids, MIX_REGISTRY_IDS)
    others = _spread(words[MIX_FREQUENT:], count - len(frequent) - len(ids) - len(nothing))
    terms = list(dict.fromkeys([*frequent, *others, *ids, *nothing]))
    spare = [t for t in registry_ids if t not in set(terms)]
    terms.extend(spare[: count - len(terms)])
    return terms[:count]


# wrk's script for the search mix: each connection walks the paths in turn from its own
# starting point, so every term is asked for about equally often.
MIX_SCRIPT = """
local paths = {PATHS}
local counter = 0
function init(args)
  counter = math.random(#paths)
end
function request()
  counter = counter % #paths + 1
  return wrk.format("GET", paths[counter])
end
"""


def write_mix_script(folder: Path, terms: list[str]) -> Path:
    """The Lua script driving one search URL per term, in turn."""
    paths = ["/registry/origins?search=" + urllib.parse.quote(term, safe="") for term in terms]
    lua_paths = ", ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in paths)
    path = folder / "search-mix.lua"
    path.write_text(MIX_SCRIPT.replace("{PATHS}", "{" + lua_paths + "}"))
    return path


_LATENCY = re.compile(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.M)
_REQUESTS = re.compile(r"^\s+(\d+) requests in ", re.M)
_TICKS = os.sysconf("SC_CLK_TCK")
_ERRORS = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)|Socket errors: (.*)")


def _milliseconds(value: str, unit: str) -> float:
    """wrk's latency figure in milliseconds."""
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


# Rows also driven with If-None-Match set to their current ETag: the 304 path (one tiny
# query, no listing or lookup), reported beside their 200 row.
REVALIDATED = ("origins (first page, limit 50)", "origin by id")


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


def selected_keys(only: str | None) -> list[str]:
    """The rows to run: all, or those --only names (the ceiling always)."""
    if not only:
        return list(ROW_KEYS)
    wanted = {key.strip() for key in only.split(",") if key.strip()}
    unknown = wanted - set(ROW_KEYS)
    if unknown:
        raise SystemExit(f"--only: unknown row(s) {sorted(unknown)}; rows: {', '.join(ROW_KEYS)}")
    return [key for key in ROW_KEYS if key == "ceiling" or key in wanted]


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


def run_exports(server: Gunicorn, token: str, folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """Full NDJSON and CSV exports, direct and (when nginx is installed) through nginx."""
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
    finally:
        if proxy is not None:
            proxy.stop()
    return results


def _ms(value: float | None) -> str:
    """A figure in milliseconds for the table, or - when there is none."""
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(prog="python -m devtools.benchmark")
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--connections",
        default="16",
        help="wrk connections; a comma-separated list (16,64) runs every row at each",
    )
    parser.add_argument(
        "--only", help=f"rows to run, comma-separated (the ceiling always): {', '.join(ROW_KEYS)}"
    )
    parser.add_argument("--no-sweep", action="store_true", help="skip the full sweep")
    parser.add_argument(
        "--mix-warm-up",
        type=int,
        default=30,
        help="seconds of search mix before it is measured (each worker meets each term)",
    )
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    parser.add_argument("--exports-only", action="store_true", help="skip wrk and the sweep")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None and not args.exports_only:
        print("make bench needs wrk (Debian package wrk)", file=sys.stderr)
        return 2
    keys = selected_keys(args.only)
    connection_counts = [int(c) for c in args.connections.split(",") if c.strip()]

    conninfo = prepare_database(args.origins, args.seed, Path(args.cache))
    targets = pick_targets(conninfo)
    singles = {key: (label, path) for key, label, path in urls(targets)}
    terms = search_terms(conninfo) if "search-mix" in keys else []
    secret = secrets.token_urlsafe(48)
    settings = {
        **load_settings(),
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_JWT_ALGORITHMS": "HS256",
    }
    token = mint_token(settings, roles=["domain_admin"], ttl_seconds=7200, subject="bench")
    env = {
        "DATABASE_URL": conninfo,
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_GUNICORN_LOGLEVEL": "warning",
    }
    # Each row is measured right after a run of the ceiling at the same connections, and its
    # ratio is to that run: on a shared machine the rate moves by 2x within the hour, while
    # two runs a few seconds apart see the same machine.
    rows: list[tuple[str, int, dict[str, Any], dict[str, Any]]] = []
    sweep: tuple[float, int] | None = None
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder)
        mix_script = write_mix_script(logs, terms) if terms else None
        ceiling = start_gunicorn(env, logs / "ceiling.log", app="devtools.ceiling_app:app")
        try:
            server = start_gunicorn(env, logs / "gunicorn.log")
        except BaseException:
            ceiling.stop()
            raise
        try:
            # CPU per request, measured beside each rate: the gunicorn workers' and, for the
            # service, its PostgreSQL backends'. Unlike req/s it hardly moves with the
            # machine's load, and it is what a capacity plan multiplies (docs/scaling.md).
            database = str(conninfo_to_dict(conninfo)["dbname"])
            ceiling_cpu: dict[str, Callable[[], float]] = {"app": lambda: app_cpu_seconds(ceiling)}
            service_cpu: dict[str, Callable[[], float]] = {
                "app": lambda: app_cpu_seconds(server),
                "db": DatabaseCpu(database),
            }
            rss_before = worker_rss_mb(server)
            if not args.exports_only:
                first = connection_counts[0]
                for connections in connection_counts:
                    for key in keys:
                        if key == "ceiling" or (key == "metrics" and connections != first):
                            continue
                        conns = 1 if key == "metrics" else connections
                        ceiling_result = measure(
                            ceiling.base + "/", token, args.seconds, conns, cpu=ceiling_cpu
                        )
                        if key == "search-mix":
                            label = f"search mix ({len(terms)} terms)"
                            result = measure(
                                server.base + "/registry/origins", token, args.seconds,
                                conns, mix_script, warm_up=args.mix_warm_up, cpu=service_cpu,
                            )  # fmt: skip
                        elif key == "ceiling-query":
                            label, path = singles[key]
                            result = measure(
                                ceiling.base + path, token, args.seconds, conns,
                                cpu={**ceiling_cpu, "db": service_cpu["db"]},
                            )  # fmt: skip
                        else:
                            label, path = singles[key]
                            result = measure(
                                server.base + path, token, args.seconds, conns, cpu=service_cpu
                            )
                        rows.append((label, conns, result, ceiling_result))
                        print(
                            f"  {label:34} c={conns:<3} {result['rps']:9.1f} req/s "
                            f"(ceiling {ceiling_result['rps']:.0f})",
                            flush=True,
                        )
                        if label in REVALIDATED:
                            url = server.base + singles[key][1]
                            conditional = (f"If-None-Match: {current_etag(url, token)}",)
                            ceiling_result = measure(
                                ceiling.base + "/", token, args.seconds, conns, cpu=ceiling_cpu
                            )
                            revalidated = measure(
                                url, token, args.seconds, conns, headers=conditional,
                                cpu=service_cpu,
                            )  # fmt: skip
                            row = f"{label}: 304"
                            rows.append((row, conns, revalidated, ceiling_result))
                            print(
                                f"  {row:34} c={conns:<3} {revalidated['rps']:9.1f} req/s "
                                f"(ceiling {ceiling_result['rps']:.0f})",
                                flush=True,
                            )
                if not args.only and not args.no_sweep:
                    sweep = full_sweep(server.base, token)
            exports = run_exports(server, token, logs)
            rss_after = worker_rss_mb(server)
        finally:
            server.stop()
            ceiling.stop()

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print()
    print(
        f"make bench ORIGINS={args.origins}  ({when}; {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}; wrk -t2 "
        f"-c{args.connections} -d{args.seconds}s)"
    )
    print()
    print("ratio: the URL's req/s over the ceiling's, measured just before it at the same")
    print("connections (a minimal Flask app answering a small JSON dict, same gunicorn.conf.py)")
    print()
    print("CPU ms/req: CPU time of the gunicorn workers (app) and of the PostgreSQL backends")
    print("serving them (db) per request answered, and the ceiling's app figure; CPU ratio:")
    print("the ceiling's CPU per request over the service's (app + db), which the machine's")
    print("load hardly moves")
    print()
    print(
        "| URL | conns | ratio | req/s | ceiling req/s | p50 ms | p99 ms "
        "| app CPU ms/req | db CPU ms/req | ceiling CPU ms/req | CPU ratio | errors |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, connections, result, ceiling_result in rows:
        ceiling_rps = ceiling_result["rps"]
        ratio = f"{result['rps'] / ceiling_rps:.2f}" if ceiling_rps else "-"
        app, db, base = result.get("app_ms"), result.get("db_ms"), ceiling_result.get("app_ms")
        cpu_ratio = f"{base / (app + db):.2f}" if app and db is not None and base else "-"
        print(
            f"| {label} | {connections} | {ratio} | {result['rps']:.0f} | {ceiling_rps:.0f} "
            f"| {_ms(result['p50'])} | {_ms(result['p99'])} | {_ms(app)} | {_ms(db)} "
            f"| {_ms(base)} | {cpu_ratio} | {result['errors'] or 'none'} |"
        )
    print()
    if sweep is not None:
        print(f"full sweep at limit=200: {sweep[1]} origins in {sweep[0]:.1f} s")
    print("| export | s | first byte ms | MB | MB/s | origins/s | worker peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, result in exports:
        seconds = result["seconds"]
        print(
            f"| {label} ({result['origins']} origins) | {seconds:.1f} | "
            f"{result['first_byte_ms']:.0f} | {result['mb']:.0f} | {result['mb'] / seconds:.0f} | "
            f"{result['origins'] / seconds:,.0f} | {result['peak_rss_mb']:.0f} |"
        )
    print()
    print(
        "worker RSS MB before: "
        + ", ".join(f"{v:.0f}" for v in rss_before)
        + "; after: "
        + ", ".join(f"{v:.0f}" for v in rss_after)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
