"""Real throttled clients reading an export, direct on gunicorn and through nginx: how long
each stops reading at a stretch, and whether it gets the whole export (docs/export.md,
"Throttled clients").

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/registry \\
        python -m devtools.throttled_clients --seconds 300

The database must hold a graph (`registry demo --origins 50000` loaded: about 43 MB of
NDJSON). Every client reads the NDJSON export of every origin at once: `curl --limit-rate`
(10k, 50k, 200k), `wget --limit-rate` and a Python client reading 1 KB at a time with sleeps
in between, each under strace (or, for the Python client, timed by itself), so the longest
time between two reads that took data from the socket is seen. By default the timeouts are
raised out of the way (`--timeout 900`), so each client's own pattern shows; with
`--as-shipped` gunicorn and nginx keep their defaults and the table says which clients
were cut. A client still reading after --seconds is stopped (its stall so far counts).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devtools.production_stack import LIFTED, start_gunicorn, start_nginx
from registry.tokens.development import mint_token

SYSCALL = re.compile(r"^(\d+\.\d+) (connect|recvfrom|read)\((\d+), (.*) = (-?\d+)")
PORT = re.compile(r"htons\((\d+)\)")


@dataclass
class Result:
    """What one client did."""

    client: str
    through: str
    received: int
    seconds: float
    longest_stall: float
    complete: bool

    def row(self) -> str:
        """One line of the table."""
        rate = self.received / max(self.seconds, 1e-9) / 1024
        return (
            f"| {self.client} | {self.through} | {self.received / 1e6:.1f} MB in "
            f"{self.seconds:.0f} s ({rate:.0f} KiB/s) | {self.longest_stall:.1f} s | "
            f"{'yes' if self.complete else 'no'} |"
        )


def longest_stall(trace: Path, port: int) -> tuple[float, int]:
    """The longest time between two reads that took data from the socket connected to port,
    and the bytes read from it, from an strace log."""
    sock_fd, last, longest, total = None, None, 0.0, 0
    for line in trace.read_text(errors="replace").splitlines():
        match = SYSCALL.match(line)
        if not match:
            continue
        stamp, call, fd, rest, result = match.groups()
        if call == "connect":
            found = PORT.search(rest)
            if found and int(found.group(1)) == port:
                sock_fd, last = fd, float(stamp)
            continue
        if fd != sock_fd or int(result) <= 0:
            continue
        now = float(stamp)
        if last is not None:
            longest = max(longest, now - last)
        last, total = now, total + int(result)
    return longest, total


def run_traced(
    name: str, command: list[str], port: int, seconds: float, folder: Path, through: str
) -> Result:
    """Run one command-line client under strace for at most seconds."""
    trace = folder / f"{name}-{through}.strace".replace(" ", "_")
    started = time.monotonic()
    process = subprocess.Popen(
        # The main thread only (no -f): each call then stands on one line of its own.
        [
            "strace",
            "-ttt",
            "-s",
            "0",
            "-e",
            "trace=connect,recvfrom,read",
            "-o",
            str(trace),
            *command,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        code = process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        # Stop the client itself (strace's child); strace then exits too.
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        for pid in children.read_text().split() if children.exists() else ():
            os.kill(int(pid), signal.SIGTERM)
        process.wait()
        code = None
    elapsed = time.monotonic() - started
    stall, received = longest_stall(trace, port)
    return Result(name, through, received, elapsed, stall, code == 0)


def python_reader(
    port: int, target: str, token: str, seconds: float, rate: int, through: str
) -> Result:
    """A socket reading 1 KB at a time, sleeping so as to keep rate bytes a second, its
    window left to Linux; complete when the chunked body's last chunk came."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(seconds)
    head = (
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Authorization: Bearer {token}\r\nAccept: application/x-ndjson\r\n\r\n"
    )
    sock.sendall(head.encode())
    started = last = time.monotonic()
    longest, taken, tail = 0.0, 0, b""
    try:
        while time.monotonic() - started < seconds:
            chunk = sock.recv(1024)
            now = time.monotonic()
            if not chunk:
                break
            longest = max(longest, now - last)
            last, taken, tail = now, taken + len(chunk), (tail + chunk)[-16:]
            ahead = taken / rate - (now - started)
            if ahead > 0:
                time.sleep(ahead)
    except OSError:
        pass
    finally:
        sock.close()
    return Result(
        f"Python, 1 KB reads at {rate // 1024}k",
        through,
        taken,
        time.monotonic() - started,
        longest,
        tail.endswith(b"\r\n0\r\n\r\n"),
    )


def main() -> None:
    """Start gunicorn and nginx over DATABASE_URL, run every client both ways at once, print
    the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300, help="most a client may take")
    parser.add_argument("--timeout", type=float, default=900, help="timeouts while measuring")
    parser.add_argument("--as-shipped", action="store_true", help="keep the default timeouts")
    parser.add_argument("--only", default="", help="clients whose name matches this regex")
    parser.add_argument("--query", default="", help="the export's filters, e.g. transport=ota")
    args = parser.parse_args()
    for tool in ("curl", "wget", "strace"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install {tool})")
    secret = "throttled-clients-secret-that-is-long-enough-0123456789"
    token = mint_token({"REGISTRY_JWT_SECRET": secret}, ttl_seconds=7200, subject="throttled")
    folder = Path(tempfile.mkdtemp(prefix="throttled-"))
    env = {
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_MAX_EXPORTS": "10",
    }
    if not args.as_shipped:
        env["REGISTRY_EXPORT_SEND_TIMEOUT_S"] = str(args.timeout)
        env["REGISTRY_GUNICORN_TIMEOUT"] = str(int(args.timeout) + 60)
    server = start_gunicorn(env, folder / "gunicorn.log", workers=10)
    proxy = start_nginx(folder / "nginx", server.port, limits=LIFTED)
    try:
        if not args.as_shipped:
            site = folder / "nginx" / "registry.conf"
            text = site.read_text()
            for directive in ("send_timeout", "proxy_read_timeout", "proxy_send_timeout"):
                text = re.sub(rf"(\s){directive} \S+;", rf"\g<1>{directive} {args.timeout}s;", text)
            site.write_text(text)
            proxy.process.send_signal(signal.SIGHUP)
            time.sleep(2)
        jobs: list[tuple[str, Callable[[], Result]]] = []
        for through, port, target in (
            ("gunicorn", server.port, f"/registry/origins?{args.query}"),
            ("nginx", proxy.port, f"/v1/registry/origins?{args.query}"),
        ):
            url = f"http://127.0.0.1:{port}{target}"
            headers = ["-H", f"Authorization: Bearer {token}", "-H", "Accept: application/x-ndjson"]
            for rate in ("10k", "50k", "200k"):
                name = f"curl --limit-rate {rate}"
                command = ["curl", "-sS", "-o", "/dev/null", "--limit-rate", rate, *headers, url]
                jobs.append((name, _traced(name, command, port, args.seconds, folder, through)))
            for rate in ("10k", "50k"):
                name = f"wget --limit-rate {rate}"
                command = [
                    "wget", "-q", "-O", "/dev/null", f"--limit-rate={rate}",
                    f"--header=Authorization: Bearer {token}",
                    "--header=Accept: application/x-ndjson", url,
                ]  # fmt: skip
                jobs.append((name, _traced(name, command, port, args.seconds, folder, through)))
            name = "Python, 1 KB reads at 10k"
            jobs.append((name, _python(port, target, token, args.seconds, 10 * 1024, through)))
        jobs = [(name, job) for name, job in jobs if re.search(args.only, name)]
        results: list[Result] = []
        threads = [
            threading.Thread(target=lambda job=job: results.append(job())) for _, job in jobs
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print("| client | through | read | longest stall | complete |")
        print("|---|---|---|---:|---|")
        for result in sorted(results, key=lambda r: (r.client, r.through)):
            print(result.row())
        print(f"(traces and logs in {folder})")
    finally:
        proxy.stop()
        server.stop()


def _traced(
    name: str, command: list[str], port: int, seconds: float, folder: Path, through: str
) -> Callable[[], Result]:
    return lambda: run_traced(name, command, port, seconds, folder, through)


def _python(
    port: int, target: str, token: str, seconds: float, rate: int, through: str
) -> Callable[[], Result]:
    return lambda: python_reader(port, target, token, seconds, rate, through)


if __name__ == "__main__":
    main()
