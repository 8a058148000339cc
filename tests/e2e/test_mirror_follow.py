"""`registry mirror sync` as a process: --follow steps again as loads land and stops on
SIGINT or SIGTERM with exit 0, rolling back a step under way; on a terminal an export shows
its progress (docs/mirror.md)."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mirror.fault_proxy import Stall
from tests.mirror.mirror_support import graph, held_records, origin
from tests.mirror.registry_harness import Registry, running_registry

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SYNC = [sys.executable, "-m", "registry.cli", "mirror", "sync"]


@pytest.fixture
def registry(
    gunicorn_factory: Callable[..., Any], database_factory: Callable[[], str]
) -> Iterator[Registry]:
    """A registry of two origins (generation 1) behind the fault proxy."""
    with running_registry(gunicorn_factory, database_factory) as running:
        running.load(graph(origin(1, "one"), origin(2, "two")))
        yield running


def start_sync(registry: Registry, target: str, log: Path, *extra: str) -> subprocess.Popen[str]:
    """`registry mirror sync` in a process of its own, standard error into log."""
    with open(log, "w") as errors:
        return subprocess.Popen(
            [*SYNC, "--url", registry.proxy.base, "--into", target, *extra],
            cwd=ROOT,
            env={**os.environ, "REGISTRY_TOKEN": registry.token},
            stdout=subprocess.DEVNULL,
            stderr=errors,
            text=True,
        )


def wait_for_line(log: Path, line: str, process: subprocess.Popen[str]) -> None:
    """Until the process has written line on standard error (failing if it exits first)."""
    deadline = time.monotonic() + 60
    while line not in log.read_text().splitlines():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_follow_steps_as_loads_land_and_stops_on_a_signal(
    registry: Registry, tmp_path: Path, stop: signal.Signals
) -> None:
    """Export, then a load's changes within the next steps; the signal between steps ends
    the process with exit 0 and the copy at the newest generation."""
    target, log = str(tmp_path / "copy.sqlite"), tmp_path / "stderr.log"
    process = start_sync(registry, target, log, "--follow", "0.2")
    try:
        wait_for_line(log, "exported generation 1: 2 origins, digest ok", process)
        wait_for_line(log, "generation 1: not modified", process)
        registry.load(graph(origin(1, "one"), origin(3, "three")))
        wait_for_line(log, "generation 1 -> 2: 2 changes, digest ok", process)
        process.send_signal(stop)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        process.kill()
    assert log.read_text().splitlines()[-1].startswith("registry mirror sync: stopped")
    assert held_records(target) == registry.newest()


def test_a_signal_mid_step_rolls_the_step_back_and_exits_0(
    registry: Registry, tmp_path: Path
) -> None:
    """SIGTERM while a body of changes is held half-way: the step is rolled back at its next
    line, the process exits 0, and the copy is still generation 1, whole."""
    target, log = str(tmp_path / "copy.sqlite"), tmp_path / "stderr.log"
    assert registry.sync(target).returncode == 0
    before = held_records(target)
    registry.load(graph(origin(1, "one, renamed"), origin(2, "two, renamed")))
    registry.proxy.faults = [Stall(2.0)]
    process = start_sync(registry, target, log, "--follow", "0.2")
    try:
        assert registry.proxy.stalled.wait(timeout=30)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        process.kill()
    printed = log.read_text().splitlines()
    assert printed[-1] == "registry mirror sync: stopped; the step under way was rolled back"
    assert not any(line.startswith("generation 1 -> 2") for line in printed)
    assert held_records(target) == before


def test_a_token_file_is_read_again_at_each_step(registry: Registry, tmp_path: Path) -> None:
    """--token-file is read at each request, so a token replaced in it is sent from the next
    step on: here one the service refuses, which ends the run (exit 1, the service's error)."""
    target, log = str(tmp_path / "copy.sqlite"), tmp_path / "stderr.log"
    token_file = tmp_path / "token"
    token_file.write_text(registry.token + "\n")
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [
                *SYNC,
                "--url",
                registry.proxy.base,
                "--into",
                target,
                "--follow",
                "0.2",
                "--token-file",
                str(token_file),
            ],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if k != "REGISTRY_TOKEN"},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        wait_for_line(log, "generation 1: not modified", process)
        token_file.write_text("rotated-but-not-a-token\n")
        assert process.wait(timeout=30) == 1, log.read_text()
    finally:
        process.kill()
    assert (
        log.read_text()
        .splitlines()[-1]
        .startswith("registry mirror sync: the service refused the token (401): ")
    )
    assert registry.proxy.seen[-1].headers["Authorization"] == "Bearer rotated-but-not-a-token"


def test_an_export_shows_its_progress_on_a_terminal(registry: Registry, tmp_path: Path) -> None:
    """Standard error a terminal: the export draws its bar (against Registry-Total) and then
    its line; to a file, the line alone (the other tests)."""
    target = str(tmp_path / "copy.sqlite")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*SYNC, "--url", registry.proxy.base, "--into", target],
        cwd=ROOT,
        env={**os.environ, "REGISTRY_TOKEN": registry.token, "COLUMNS": "100"},
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    try:
        while True:
            try:
                piece = os.read(leader, 65536)
            except OSError:  # the terminal's last writer has gone
                break
            if not piece:
                break
            shown += piece
        assert process.wait(timeout=30) == 0
    finally:
        os.close(leader)
        process.kill()
    text = shown.decode("utf-8", "replace")
    assert "exporting" in text and "2/2" in text
    assert text.rstrip().endswith("exported generation 1: 2 origins, digest ok")
