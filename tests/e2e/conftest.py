"""Real HTTP through gunicorn: started as operators do, by devtools.production_stack."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.production_stack import Gunicorn, nginx_binary, start_gunicorn
from tests.tools import require_tool


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


@pytest.fixture
def gunicorn_factory(tmp_path: Path) -> Iterator[Callable[..., Gunicorn]]:
    """Start gunicorn servers (logging to files); each is stopped at the end of the test."""
    started: list[Gunicorn] = []

    def start(env_extra: dict[str, str], workers: int = 2) -> Gunicorn:
        """One server with these settings, answering before it is returned."""
        server = start_gunicorn(env_extra, tmp_path / f"gunicorn-{len(started)}.log", workers)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def nginx_installed() -> None:
    """For modules that put nginx in front of gunicorn in every test
    (`pytest.mark.usefixtures("nginx_installed")`): skip or fail as tests/tools.py says."""
    require_tool(nginx_binary(), "nginx", "nginx")
