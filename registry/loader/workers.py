"""The loader's second core: a file cut at line boundaries, each piece handled by a process.

The parse (registry.loader.parsing) and the render (registry.loader.rendering) both read a
file of lines, one piece per worker process, each writing files of its own that the loader
reads back in order. Workers are spawned, not forked: the loader holds an open database
connection. A worker that fails or dies ends the load with an error; leaving the `with`
block ends every worker still running, so an error (or Ctrl-C) never leaves one behind.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any

_CONTEXT = multiprocessing.get_context("spawn")
# More workers than this buys nothing: the database side of a load runs on one connection.
MAX_WORKERS = 4
_SCAN_BYTES = 1 << 16


def worker_count() -> int:
    """How many worker processes a load uses: the cores this process may run on, 1 to 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def shared_counters(size: int) -> Any:
    """Integers workers write and the loader reads (progress), without a lock."""
    return _CONTEXT.Array("q", size, lock=False)


def line_ranges(path: str, start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """[start, end) of the file cut into at most parts byte ranges of about equal size.

    Each cut is just after a newline, so every line lies in exactly one range; a piece that
    would start inside the last line is dropped, so there may be fewer ranges than parts.
    """
    cuts = [start]
    with open(path, "rb") as file:
        for part in range(1, parts):
            target = max(start + (end - start) * part // parts, cuts[-1])
            cut = next_line_start(file, target, end)
            if cut >= end:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
    cuts.append(end)
    return list(itertools.pairwise(cuts))


def next_line_start(file: Any, target: int, end: int) -> int:
    """The first offset at or after target that starts a line (end if there is none)."""
    if target <= 0:
        return 0
    file.seek(target - 1)
    position = target - 1
    while position < end:
        chunk = file.read(min(_SCAN_BYTES, end - position))
        if not chunk:
            return end
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)
    return end


def count_lines(path: str, start: int, end: int) -> int:
    """How many newlines [start, end) of the file holds (read in 1 MiB blocks)."""
    lines = 0
    with open(path, "rb", buffering=0) as file:
        file.seek(start)
        left = end - start
        while left > 0:
            block = file.read(min(1 << 20, left))
            if not block:
                break
            lines += block.count(b"\n")
            left -= len(block)
    return lines


class WorkerFailed(RuntimeError):
    """A worker process raised or died; the load cannot go on."""


def _run(target: Callable[..., Any], args: tuple[Any, ...], results: Connection) -> None:
    """In the worker: call target, send back its result or what went wrong."""
    try:
        outcome: tuple[str, Any] = ("ok", target(*args))
    except BaseException:  # the loader reports whatever stopped the worker
        outcome = ("error", traceback.format_exc())
    results.send(outcome)
    results.close()


class WorkerProcesses:
    """Worker processes started one per call; their results are collected in start order."""

    def __init__(self) -> None:
        self._processes: list[BaseProcess] = []
        self._pipes: list[Connection] = []
        self._results: dict[int, Any] = {}

    def __enter__(self) -> WorkerProcesses:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def start(self, target: Callable[..., Any], *args: Any) -> int:
        """Run target(*args) in a new process (target must be importable); its number."""
        receive, send = _CONTEXT.Pipe(duplex=False)
        process = _CONTEXT.Process(target=_run, args=(target, args, send), daemon=True)
        process.start()
        send.close()
        self._processes.append(process)
        self._pipes.append(receive)
        return len(self._processes) - 1

    def wait_any(self, timeout: float | None) -> None:
        """Return when a worker has finished or timeout seconds have passed."""
        pending: list[Any] = []
        for number, process in enumerate(self._processes):
            if number not in self._results:
                pending += [self._pipes[number], process.sentinel]
        if pending:
            wait(pending, timeout)

    def done(self, number: int) -> bool:
        """Whether worker number has finished (well or not)."""
        if number in self._results:
            return True
        return self._pipes[number].poll() or not self._processes[number].is_alive()

    def wait_for(self, number: int, timeout: float) -> None:
        """Return when worker number has finished or timeout seconds have passed."""
        if number not in self._results:
            wait([self._pipes[number], self._processes[number].sentinel], timeout)

    def result(self, number: int) -> Any:
        """Worker number's result, waiting for it; WorkerFailed if it raised or died."""
        if number not in self._results:
            pipe, process = self._pipes[number], self._processes[number]
            wait([pipe, process.sentinel])
            try:
                status, value = pipe.recv()
            except EOFError:
                process.join()
                raise WorkerFailed(
                    f"a load worker stopped without a result (exit status {process.exitcode})"
                ) from None
            process.join()
            if status != "ok":
                raise WorkerFailed(f"a load worker failed:\n{value}")
            self._results[number] = value
        return self._results[number]

    def close(self) -> None:
        """End every worker still running and release their pipes."""
        for process in self._processes:
            if process.is_alive():
                process.terminate()
        for process in self._processes:
            process.join()
        for pipe in self._pipes:
            pipe.close()
