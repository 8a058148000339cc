"""A new user's first hour, as the README tells it: `make run` (`registry serve --dev`) where
REGISTRY_BIND says, its demo as the first generation, Ctrl-C leaving no PostgreSQL behind,
and read-only commands elsewhere creating nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from devtools.production_stack import free_port
from registry.database.embedded import PGDATA_FOLDER, embedded_running
from tests.e2e.test_paths_operators_take import ROOT, clean_env, stop, wait_for_200

pytestmark = pytest.mark.e2e

DEMO = "100"


def serve(env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    """`registry serve --dev` (with a small demo unless extra says otherwise), its output
    read by the test."""
    demo = [] if "--demo-origins" in extra else ["--demo-origins", DEMO]
    return subprocess.Popen(
        [sys.executable, "-m", "registry.cli", "serve", "--dev", *demo, *extra],
        cwd=ROOT,
        env={**env, "REGISTRY_WORKERS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def printed_until(process: subprocess.Popen[str], marker: str) -> list[str]:
    """What the process printed up to the line holding marker."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if marker in line:
            return lines
    raise AssertionError(f"never printed {marker!r}: {lines}")


def registry(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`registry ARGS`, whatever it exits with."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_serve_listens_where_registry_bind_says_and_its_demo_is_generation_1(
    database_factory, tmp_path: Path
):
    """REGISTRY_BIND with no --bind: gunicorn listens there and the printed lines say so; on
    a database never loaded, the demo's load is the first generation, no empty one before,
    and its changed twin's (`registry demo --changes 0.02`) the second."""
    port = free_port()
    conninfo = database_factory()
    env = clean_env(
        DATABASE_URL=conninfo,
        REGISTRY_STATE_DIR=str(tmp_path / "state"),
        REGISTRY_BIND=f"127.0.0.1:{port}",
    )
    # The demo's size as `make run` loads it (10,000), so that its twin adds and removes.
    server = serve(env, "--demo-origins", "10000")
    try:
        printed = printed_until(server, "/registry/origins?limit=2")
        assert f"The Broadcast Registry API is starting on http://127.0.0.1:{port}" in printed
        wait_for_200(f"http://127.0.0.1:{port}/healthz", server)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            kept = conn.execute(
                "SELECT generation, origins, added, removed, changed"
                " FROM registry_meta.generations ORDER BY generation"
            ).fetchall()
        # The first load adds every origin; its twin changes 2 % of them, as the README says:
        # 50 added, 50 removed, 100 changed.
        assert kept == [(1, 10_000, 10_000, 0, 0), (2, 10_000, 50, 50, 100)]
    finally:
        stop(server)
        if server.stdout is not None:
            server.stdout.close()


@pytest.mark.parametrize("running_before", [False, True])
def test_ctrl_c_stops_the_embedded_server_serve_started(tmp_path: Path, running_before: bool):
    """SIGINT to `registry serve --dev` alone: gunicorn stops, and so does the embedded
    PostgreSQL it started; one that was running before is left running."""
    state = tmp_path / "state"
    env = clean_env(REGISTRY_STATE_DIR=str(state))
    if running_before:
        assert registry(env, "db", "upgrade").returncode == 0
        assert embedded_running(state)
    port = free_port()
    server = serve(env, "--bind", f"127.0.0.1:{port}")
    try:
        printed_until(server, "/registry/origins?limit=2")
        wait_for_200(f"http://127.0.0.1:{port}/healthz", server)
        assert embedded_running(state)
        os.kill(server.pid, signal.SIGINT)
        code = server.wait(120)
        assert server.stdout is not None
        said = server.stdout.read()
        assert code == 0, said
        assert embedded_running(state) is running_before
        assert ("stopped the embedded PostgreSQL" in said) is not running_before
    finally:
        stop(server)
        if server.stdout is not None:
            server.stdout.close()
        registry(env, "db", "stop")


@pytest.mark.parametrize("command", [("status",), ("db", "url")])
def test_read_only_commands_elsewhere_create_nothing(tmp_path: Path, command: tuple[str, ...]):
    """Run outside the project folder: no cluster is created under that folder's .registry,
    the command says where it looked and how to point it elsewhere, and exits non-zero."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env()
    env.pop("REGISTRY_STATE_DIR", None)
    done = registry(env, *command, cwd=elsewhere)
    assert done.returncode == 1
    assert str(elsewhere / ".registry") in done.stderr
    assert "REGISTRY_STATE_DIR" in done.stderr and "DATABASE_URL" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (elsewhere / ".registry" / PGDATA_FOLDER).exists()
