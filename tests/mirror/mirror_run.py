"""`registry mirror` as a consumer runs it: a subprocess, the token in its environment (or a
file), and what it said; and the check every converged step must pass (docs/mirror.md): the
copy's records are the export of its generation, as parsed JSON by id; its `mirror` row names
the URL, that generation and the digest the service gives it (Registry-Digest), which is also
the digest of the records held; `status` says the same; `verify` agrees."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson

from tests.mirror.mirror_copy import Store
from tests.mirror.registry_stack import TOKEN, Registry

# The longest any one run may take before the test gives up on it (a hang is a failure).
RUN_TIMEOUT_S = 300


@dataclass
class Finished:
    """How a run ended: exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        """Its stderr lines that say something."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def command(*args: str) -> list[str]:
    """`registry ARGS` as a process of this Python."""
    return [sys.executable, "-m", "registry.cli", *args]


def environment(token: str | None = TOKEN, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with the token in REGISTRY_TOKEN (or none at all)."""
    env = {name: value for name, value in os.environ.items() if name != "REGISTRY_TOKEN"}
    if token is not None:
        env["REGISTRY_TOKEN"] = token
    return {**env, **(extra or {})}


def mirror(*args: str, token: str | None = TOKEN, extra: dict[str, str] | None = None) -> Finished:
    """`registry mirror ARGS`, to its end."""
    done = subprocess.run(
        command("mirror", *args),
        env=environment(token, extra),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    return Finished(done.returncode, done.stdout, done.stderr)


def sync(url: str, store: Store, *more: str, token: str | None = TOKEN) -> Finished:
    """`registry mirror sync --url URL --into TARGET ...`, to its end."""
    return mirror("sync", "--url", url, "--into", store.target, *more, token=token)


@dataclass
class Running:
    """A `registry mirror` process started in the background, its output in files."""

    process: subprocess.Popen[bytes]
    out_path: Path
    err_path: Path
    _files: list[IO[bytes]] = field(default_factory=list)

    def stderr(self) -> str:
        """What it wrote to stderr so far."""
        return self.err_path.read_text(errors="replace")

    def alive(self) -> bool:
        """Whether it is still running."""
        return self.process.poll() is None

    def signal(self, number: int) -> None:
        """Send it a signal (it must still be running)."""
        self.process.send_signal(number)

    def wait(self, seconds: float = RUN_TIMEOUT_S) -> Finished:
        """Wait for its end (killing it past `seconds`, and failing)."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired as expired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"registry mirror still ran after {seconds} s:\n{self.stderr()}"
            ) from expired
        finally:
            for file in self._files:
                file.close()
        return Finished(
            self.process.returncode, self.out_path.read_text(errors="replace"), self.stderr()
        )

    def kill(self) -> Finished:
        """kill -9 if it still runs, and what it had printed (its files closed either way)."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        return self.wait()


# Every run started in the background, until the test that started it ends (ended_runs in
# tests/mirror/conftest.py): a run a failed test left running is killed, its files closed.
STARTED: list[Running] = []


def start(folder: Path, *args: str, token: str | None = TOKEN) -> Running:
    """`registry mirror ARGS` in the background."""
    folder.mkdir(parents=True, exist_ok=True)
    serial = len(list(folder.glob("run-*.err")))
    out_path, err_path = folder / f"run-{serial}.out", folder / f"run-{serial}.err"
    out, err = open(out_path, "wb"), open(err_path, "wb")  # noqa: SIM115 (closed by wait)
    process = subprocess.Popen(
        command("mirror", *args), env=environment(token), stdout=out, stderr=err
    )
    running = Running(process, out_path, err_path, [out, err])
    STARTED.append(running)
    return running


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Poll until condition holds; fail saying what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"within {seconds} s: {what}")
        time.sleep(0.05)


def differences(held: dict[str, bytes], expected: dict[str, bytes]) -> str:
    """What differs between two sets of records by id, briefly."""
    missing = sorted(expected.keys() - held.keys())
    extra = sorted(held.keys() - expected.keys())
    changed = sorted(key for key in held.keys() & expected.keys() if held[key] != expected[key])
    return (
        f"{len(missing)} missing {missing[:3]}, {len(extra)} not in the export {extra[:3]}, "
        f"{len(changed)} differ {changed[:3]}"
    )


def assert_whole(store: Store, registry: Registry, generation: int | None = None) -> int:
    """The copy is one generation whole: its records are that generation's export (as parsed
    JSON, by id) and its row's digest is the service's for it, which is also the digest of
    the records. The generation (when given, it must be that one)."""
    row, held = store.state()
    assert row is not None, "no copy in the store"
    if generation is not None:
        assert row["generation"] == generation, (row, generation)
    exported = registry.export(row["generation"])
    assert held == exported.identities, differences(held, exported.identities)
    assert row["digest"] == exported.digest == exported.computed, (row, exported.digest)
    return int(row["generation"])


def assert_converged(
    store: Store,
    registry: Registry,
    url: str,
    generation: int | None = None,
    finished: Finished | None = None,
) -> int:
    """After a step that converged: the copy is `generation` (by default the newest) whole,
    from `url`; `registry mirror status` says so and `verify` (with --url) agrees. The
    generation."""
    if finished is not None:
        assert finished.returncode == 0, finished.stderr
    expected = registry.current() if generation is None else generation
    reached = assert_whole(store, registry, expected)
    row = store.row()
    assert row is not None and row["url"] == url, (row, url)
    assert row["synced_at"] is not None, row
    status = mirror("status", "--into", store.target, token=None)
    assert status.returncode == 0, status.stderr
    shown = orjson.loads(status.stdout)
    exported = registry.export(reached)
    assert {key: shown.get(key) for key in ("url", "generation", "origins", "digest")} == {
        "url": url,
        "generation": reached,
        "origins": exported.total,
        "digest": exported.digest,
    }, shown
    assert shown.get("synced_at"), shown
    verified = mirror("verify", "--into", store.target, "--url", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return reached


def step_line(finished: Finished, pattern: str) -> None:
    """The run said exactly one line, and it is `pattern` (a fixed text)."""
    assert finished.lines == [pattern], finished.stderr
