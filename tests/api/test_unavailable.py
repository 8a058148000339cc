"""The pool while the database cannot be reached: 503 with Retry-After, quickly, for every
request, not one pool timeout each (tests/e2e/test_faults.py stops and starts a real server)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from flask import Flask

from tests.conftest import make_token

ADMIN = {"Authorization": f"Bearer {make_token()}"}


def free_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_requests_fail_fast_while_the_database_is_unreachable(
    api_app_factory: Callable[..., Flask],
):
    """With the default 1.5 s pool timeout, a run of requests is a run of quick 503s."""
    app = api_app_factory(f"postgresql://postgres@127.0.0.1:{free_port()}/registry")
    client = app.test_client()
    durations = []
    for path in ["/summary", "/registry/summary", "/registry/origins", "/readyz"] * 5:
        started = time.monotonic()
        response = client.get(path, headers=ADMIN)
        durations.append(time.monotonic() - started)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "2"
        assert response.get_json()["error"] == "Service Unavailable"
    assert max(durations) < 1.6
    assert sorted(durations)[-2] < 0.3
    assert app.extensions["registry_db"].unreachable
