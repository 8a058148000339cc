"""Real HTTP through gunicorn: start the server as operators do, on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
LOGS: dict[int, IO[str]] = {}


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Response:
    """What came back over HTTP."""

    status: int
    headers: dict[str, str]
    body: bytes


def fetch(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> Response:
    """One HTTP request; HTTP errors are answers too."""
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return Response(answer.status, dict(answer.headers), answer.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers), error.read())


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    """Poll url until it answers, failing early if the server died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = _output(process)
            raise AssertionError(f"the server exited with {process.returncode}:\n{output}")
        try:
            fetch(url)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {seconds} s")


@dataclass
class Server:
    """A running gunicorn and where to reach it."""

    base: str
    process: subprocess.Popen


def start_gunicorn(env_extra: dict[str, str], workers: int = 2) -> Server:
    """gunicorn wsgi:app from the repository root, configured by gunicorn.conf.py."""
    port = free_port()
    env = {
        **os.environ,
        "REGISTRY_BIND": f"127.0.0.1:{port}",
        "REGISTRY_WORKERS": str(workers),
        **env_extra,
    }
    # A file, not a pipe: with a log line per request, an unread pipe would fill and block
    # the workers.
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed in stop()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "wsgi:app"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    LOGS[process.pid] = log
    server = Server(f"http://127.0.0.1:{port}", process)
    wait_until_up(server.base + "/summary", process)
    return server


def stop(process: subprocess.Popen) -> str:
    """Stop a server gracefully and return what it printed."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return _output(process)


def _output(process: subprocess.Popen) -> str:
    """Everything the server has printed so far."""
    log = LOGS.get(process.pid)
    if log is None:
        return ""
    log.flush()
    log.seek(0)
    return log.read()


@pytest.fixture
def gunicorn_factory() -> Iterator:
    """Start gunicorn servers; each is stopped at the end of the test."""
    started: list[Server] = []

    def start(env_extra: dict[str, str], workers: int = 2) -> Server:
        server = start_gunicorn(env_extra, workers)
        started.append(server)
        return server

    yield start
    for server in started:
        stop(server.process)
