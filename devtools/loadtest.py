"""`make loadtest` and `make faulttest`: mixed load through nginx and gunicorn, as deployed.

python -m devtools.loadtest load  [--origins N] [--seconds 60] [--connections 64]
python -m devtools.loadtest fault [--origins N] [--seconds 60] [--stop-at 20] [--down 10]

Both serve a demo graph with gunicorn.conf.py behind deploy/nginx.conf and drive wrk at the
/v1/ URLs (the public URLs of `make bench`, picked at random per request, with an admin token),
with a Lua script that sorts every answer by 100 ms, status and kind.

load: the graph of `make bench` on the configured server; passes with zero errors and prints
p50 and p99. fault: the graph in a private embedded PostgreSQL (its own state folder under a
temporary directory, so nothing shared is stopped), which is stopped at --stop-at for --down
seconds and started again; passes when every failed request is the documented 503 JSON with
Retry-After, there is no other status and no socket error, and failures end within 5 s of the
restart. Both check that no gunicorn worker died, print one summary line, and exit 0 on a pass.
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
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from devtools.bench_targets import demo_document, pick_targets, prepare_database, public_urls
from devtools.production_stack import (
    PREFIX,
    REPO,
    Gunicorn,
    Nginx,
    PrivatePostgres,
    nginx_binary,
    start_gunicorn,
    start_nginx,
)
from registry.loader.loading import load_counts_line, load_document
from registry.settings import load_settings
from registry.tokens.development import mint_token

RECOVERY_LIMIT_S = 5.0
UNAVAILABLE_BODY = '{"success":false,"error":"Service Unavailable"}'
# gunicorn's own words for a worker that did not end well (a graceful recycle after
# max_requests says "Autorestarting" and is counted apart).
WORKER_TROUBLE = re.compile(
    r"WORKER TIMEOUT|exited with code|was sent SIG(?!TERM)|Perhaps out of memory"
)

# wrk's script. Paths and the token are filled in; each thread counts its answers by
# 100 ms bucket (LuaJIT's FFI gives wall-clock milliseconds), status and kind, and done()
# prints every thread's counts, the totals and the latency percentiles.
WRK_SCRIPT = """
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } registry_timespec;
int clock_gettime(int clock_id, registry_timespec *tp);
]]
local clock = ffi.new("registry_timespec")
local function now_ms()
  ffi.C.clock_gettime(0, clock)
  return tonumber(clock.tv_sec) * 1000 + math.floor(tonumber(clock.tv_nsec) / 1000000)
end

local paths = {PATHS}
local auth = {["Authorization"] = "Bearer TOKEN"}
local unavailable = 'UNAVAILABLE'
local threads = {}
local next_id = 1

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(id * 7919 + os.time())
  buckets = {}
end

function request()
  return wrk.format("GET", paths[math.random(#paths)], auth)
end

function response(status, headers, body)
  local kind = "ok"
  if status ~= 200 then
    if status == 503 and headers["Content-Type"] == "application/json"
        and headers["Retry-After"] ~= nil and body == unavailable then
      kind = "unavailable"
    else
      kind = "other"
    end
  end
  local key = math.floor(now_ms() / 100) .. " " .. status .. " " .. kind
  buckets[key] = (buckets[key] or 0) + 1
end

function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    for key, count in pairs(thread:get("buckets")) do
      io.write("BUCKET " .. key .. " " .. count .. "\\n")
    end
  end
  io.write(string.format("TOTAL %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status,
    summary.errors.timeout))
  io.write(string.format("LATENCY %d %d %d\\n", latency:percentile(50), latency:percentile(99),
    latency.max))
end
"""


@dataclass
class WrkResult:
    """What one wrk run saw."""

    requests: int = 0
    seconds: float = 0.0
    socket_errors: dict[str, int] = field(default_factory=dict)
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    # (100 ms bucket, status, kind) -> answers; kind is ok, unavailable or other.
    buckets: Counter[tuple[int, int, str]] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0

    def count(self, kind: str) -> int:
        """Answers of one kind."""
        return sum(n for (_, _, k), n in self.buckets.items() if k == kind)

    def statuses(self, kind: str) -> Counter[int]:
        """Answers of one kind by status."""
        found: Counter[int] = Counter()
        for (_, status, k), n in self.buckets.items():
            if k == kind:
                found[status] += n
        return found

    def failure_window(self) -> tuple[float, float] | None:
        """Epoch seconds of the first and the end of the last bucket with a failed answer."""
        failed = [bucket for (bucket, _, kind) in self.buckets if kind != "ok"]
        if not failed:
            return None
        return min(failed) / 10, (max(failed) + 1) / 10


def write_script(folder: Path, paths: list[str], token: str) -> Path:
    """wrk's Lua script for these paths and this token."""
    lua_paths = ", ".join(
        '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"' for path in paths
    )
    script = (
        WRK_SCRIPT.replace("{PATHS}", "{" + lua_paths + "}")
        .replace("TOKEN", token)
        .replace("UNAVAILABLE", UNAVAILABLE_BODY)
    )
    path = folder / "mixed.lua"
    path.write_text(script)
    return path


def wrk_command(url: str, script: Path, seconds: int, connections: int, threads: int) -> list[str]:
    """The wrk command line (requests taking over 10 s count as socket timeouts)."""
    return [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
        "-s", str(script), url,
    ]  # fmt: skip


def parse_wrk(output: str) -> WrkResult:
    """Read the script's BUCKET, TOTAL and LATENCY lines."""
    result = WrkResult()
    for line in output.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "BUCKET" and len(parts) == 5:
            result.buckets[(int(parts[1]), int(parts[2]), parts[3])] += int(parts[4])
        elif parts[0] == "TOTAL":
            values = [int(value) for value in parts[1:]]
            result.requests = values[0]
            result.seconds = values[1] / 1e6
            connect, read, write, _status, timeout = values[2:7]
            result.socket_errors = {
                "connect": connect,
                "read": read,
                "write": write,
                "timeout": timeout,
            }
        elif parts[0] == "LATENCY":
            result.p50_ms, result.p99_ms, result.max_ms = (int(v) / 1000 for v in parts[1:4])
    return result


def run_wrk(url: str, script: Path, seconds: int, connections: int, threads: int) -> WrkResult:
    """One wrk run to its end."""
    output = subprocess.run(
        wrk_command(url, script, seconds, connections, threads),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_wrk(output)


def check_every_url(nginx: Nginx, paths: list[str], token: str) -> None:
    """Each URL answers 200 through nginx before any load starts."""
    for path in paths:
        request = urllib.request.Request(
            nginx.root + path, headers={"Authorization": f"Bearer {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status = answer.status
        except urllib.error.HTTPError as error:
            status = error.code
        if status != 200:
            raise RuntimeError(f"{path} answered {status} through nginx")


def worker_report(gunicorn: Gunicorn) -> tuple[int, int]:
    """(workers that died or were killed, workers recycled after max_requests)."""
    output = gunicorn.output()
    return len(WORKER_TROUBLE.findall(output)), output.count("Autorestarting worker")


@dataclass
class Stack:
    """gunicorn and nginx for one run, and their temporary folder."""

    folder: Path
    gunicorn: Gunicorn
    nginx: Nginx
    token: str
    paths: list[str]

    def stop(self) -> None:
        """Stop nginx, then gunicorn."""
        self.nginx.stop()
        self.gunicorn.stop()


def start_stack(folder: Path, conninfo: str) -> Stack:
    """gunicorn (gunicorn.conf.py, its default workers) over conninfo, nginx in front."""
    secret = secrets.token_urlsafe(48)
    settings = {
        **load_settings(),
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_JWT_ALGORITHMS": "HS256",
    }
    token = mint_token(settings, roles=["domain_admin"], ttl_seconds=7200, subject="loadtest")
    env = {"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": secret}
    gunicorn = start_gunicorn(env, folder / "gunicorn.log")
    try:
        nginx = start_nginx(
            folder / "nginx", gunicorn.port, worker_processes="auto", access_log=True
        )
    except BaseException:
        gunicorn.stop()
        raise
    paths = [PREFIX + path for _, _, path in public_urls(pick_targets(conninfo))]
    stack = Stack(folder, gunicorn, nginx, token, paths)
    check_every_url(nginx, paths, token)
    return stack


def describe_machine(args: argparse.Namespace) -> str:
    """When and where, for the figures."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{when}; {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}; {args.origins} origins; wrk -t{args.threads} "
        f"-c{args.connections} -d{args.seconds}s through nginx"
    )


def command_load(args: argparse.Namespace) -> int:
    """make loadtest: mixed URLs through nginx; zero errors; p50 and p99."""
    conninfo = prepare_database(args.origins, args.seed, Path(args.cache))
    with tempfile.TemporaryDirectory(prefix="registry-loadtest-") as temporary:
        stack = start_stack(Path(temporary), conninfo)
        try:
            script = write_script(stack.folder, stack.paths, stack.token)
            url = stack.nginx.root + "/"
            run_wrk(url, script, 5, args.connections, args.threads)  # warm every worker
            result = run_wrk(url, script, args.seconds, args.connections, args.threads)
        finally:
            stack.stop()
        died, recycled = worker_report(stack.gunicorn)
    socket_errors = sum(result.socket_errors.values())
    non_200 = result.count("unavailable") + result.count("other")
    passed = socket_errors == 0 and non_200 == 0 and died == 0
    print()
    print(f"make loadtest ({describe_machine(args)})")
    print(
        f"loadtest: {result.requests} requests in {result.seconds:.0f} s ({result.rate:.0f} req/s) "
        f"over {len(stack.paths)} mixed URLs at {args.connections} connections through nginx; "
        f"errors {non_200 + socket_errors} (non-200 {non_200}, socket {socket_errors}); "
        f"p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, max {result.max_ms:.0f} ms; "
        f"workers died {died}, recycled {recycled}: {'PASS' if passed else 'FAIL'}"
    )
    if non_200:
        print(
            f"  non-200 statuses: {dict(result.statuses('unavailable') + result.statuses('other'))}"
        )
    return 0 if passed else 1


def timeline(result: WrkResult, start: float, end: float) -> list[str]:
    """Answers per second between two epoch moments: ok, 503 JSON, other."""
    seconds: dict[int, Counter[str]] = defaultdict(Counter)
    for (bucket, _, kind), count in result.buckets.items():
        seconds[bucket // 10][kind] += count
    rows = ["| second | 200 | 503 JSON | other |", "|---:|---:|---:|---:|"]
    for second in range(int(start), int(end) + 1):
        counts = seconds.get(second, Counter())
        cells = (second - int(start), counts["ok"], counts["unavailable"], counts["other"])
        rows.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return rows


def command_fault(args: argparse.Namespace) -> int:
    """make faulttest: the same load while a private PostgreSQL is stopped and started."""
    document = demo_document(args.origins, args.seed, Path(args.cache))
    with tempfile.TemporaryDirectory(prefix="registry-faulttest-") as temporary:
        folder = Path(temporary)
        postgres = PrivatePostgres(folder / "state")
        postgres.start()
        try:
            with psycopg.connect(postgres.url, autocommit=True) as conn, open(document, "rb") as f:
                print(load_counts_line(load_document(conn, f)), flush=True)
            stack = start_stack(folder, postgres.url)
            try:
                script = write_script(folder, stack.paths, stack.token)
                url = stack.nginx.root + "/"
                run_wrk(url, script, 5, args.connections, args.threads)  # warm every worker
                load = subprocess.Popen(
                    wrk_command(url, script, args.seconds, args.connections, args.threads),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                began = time.time()
                time.sleep(args.stop_at)
                stopped_at = time.time()
                postgres.stop()
                time.sleep(max(0.0, args.down - (time.time() - stopped_at)))
                restarted_at = time.time()
                postgres.start()
                ready_after = time.time() - restarted_at
                output, _ = load.communicate(timeout=args.seconds + 60)
            finally:
                stack.stop()
        finally:
            postgres.stop(mode="immediate")
        died, recycled = worker_report(stack.gunicorn)
    result = parse_wrk(output)
    unavailable = result.count("unavailable")
    others = result.statuses("other")
    socket_errors = sum(result.socket_errors.values())
    window = result.failure_window()
    # Measured from the moment the restart began: pg_ctl returns only after polling.
    recovery = max(0.0, window[1] - restarted_at) if window else 0.0
    passed = (
        unavailable > 0
        and not others
        and socket_errors == 0
        and recovery <= RECOVERY_LIMIT_S
        and died == 0
    )
    print()
    print(f"make faulttest ({describe_machine(args)})")
    print(*timeline(result, stopped_at - 3, restarted_at + 7), sep="\n")
    print(
        f"faulttest: PostgreSQL stopped {restarted_at - stopped_at:.1f} s "
        f"(from {stopped_at - began:.0f} s into {args.seconds} s of load at {args.connections} "
        f"connections through nginx): {result.requests} requests, "
        f"{unavailable + sum(others.values())} failed, {unavailable} of them 503 JSON with "
        f"Retry-After, other statuses {dict(others) or 0}, socket errors {socket_errors}; "
        f"failures ended {recovery:.1f} s after the restart began (the server was ready after "
        f"{ready_after:.1f} s); p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, "
        f"max {result.max_ms:.0f} ms; "
        f"workers died {died}, recycled {recycled}: {'PASS' if passed else 'FAIL'}"
    )
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    """Run the load test or the fault test."""
    parser = argparse.ArgumentParser(prog="python -m devtools.loadtest")
    parser.add_argument("test", choices=["load", "fault"])
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--stop-at", type=float, default=20.0, help="fault: seconds into the load")
    parser.add_argument("--down", type=float, default=10.0, help="fault: seconds stopped")
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    args = parser.parse_args(argv)
    missing = [tool for tool in ("wrk", "nginx") if shutil.which(tool) is None]
    if "nginx" in missing and nginx_binary() is not None:
        missing.remove("nginx")
    if missing:
        print(
            f"make {args.test}test needs {' and '.join(missing)} (Debian packages)", file=sys.stderr
        )
        return 2
    if args.test == "fault" and args.stop_at + args.down + 5 > args.seconds:
        parser.error("--stop-at + --down + 5 must fit in --seconds")
    return command_load(args) if args.test == "load" else command_fault(args)


if __name__ == "__main__":
    sys.exit(main())
