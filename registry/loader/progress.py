"""Progress of long commands (`registry load`, `registry demo`): on a terminal, and only there.

The loader and the demo writer report to a LoadProgress: which phase runs, how far it has got.
The base class reports nothing (piped output stays one summary line); TerminalProgress draws
one line per phase with rich (a bar, counts, a rate, the time taken and the time left) and
leaves the finished lines on screen.

The phases of a load, in order: `parse` (the document read and checked line by line: records,
bytes when the size is known), `copy` (the spooled rows sent with COPY: bytes), `check` (the
whole-document rules: unique ids, references), `read model` (the rows and documents every
request reads; the documents' render starts here and runs on in worker processes), `indexes`
(the read and search indexes, then the rendered documents copied in and indexed), `change set`
(the change set against the live graph, docs/loading.md, Dry run and guards; a dry run ends here)
and `publish` (grants, statistics, the swap and the commit, then clearing out the replaced graph).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

PHASES = ("parse", "copy", "check", "read model", "indexes", "change set", "publish")
_MB = 1_000_000


class LoadProgress:
    """Where a long command has got. This one tells nobody: the piped, non-terminal case."""

    def phase(self, name: str, total: float | None = None, unit: str = "steps") -> None:
        """A new phase starts, of total units (None: not known in advance)."""

    def advance(self, amount: float = 1, step: str | None = None) -> None:
        """amount more units of the current phase are done; step names what runs next."""

    def parsed(self, lines: int, position: int | None = None) -> None:
        """The document reader's callback: lines read so far (and bytes, from parse workers)."""

    def close(self) -> None:
        """The command is over (done or failed): stop drawing."""


def _amount(value: float, unit: str) -> str:
    """value in unit, readable: bytes as MB, everything else as a grouped integer."""
    if unit == "bytes":
        return f"{value / _MB:,.1f} MB"
    return f"{value:,.0f} {unit}"


class _DetailColumn(ProgressColumn):
    """How far the phase has got, in its own words ("1,200,000 records, 96.0 of 210.5 MB")."""

    def render(self, task: Task) -> Text:
        """The task's detail field."""
        return Text(str(task.fields.get("detail", "")), style="progress.download")


class _RateColumn(ProgressColumn):
    """Units per second since the phase started."""

    def render(self, task: Task) -> Text:
        """The task's rate field."""
        return Text(str(task.fields.get("rate", "")), style="progress.data.speed")


class TerminalProgress(LoadProgress):
    """One line per phase on the terminal: bar, counts, rate, elapsed and remaining time."""

    def __init__(
        self,
        stream: IO[str],
        size: int | None = None,
        position: Callable[[], int] | None = None,
    ):
        """Draw on stream (a terminal); size and position give parse its share of the bytes."""
        self._size = size
        self._position = position
        self._console = Console(file=stream, highlight=False)
        self._progress = Progress(
            TextColumn("{task.description:<10}", style="bold"),
            BarColumn(bar_width=30),
            TextColumn("{task.percentage:>3.0f}%"),
            _DetailColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=self._console,
            refresh_per_second=8,
        )
        self._task: TaskID | None = None
        self._unit = "steps"
        self._started = 0.0
        self._done = 0.0
        self._total: float | None = None
        self._step: str | None = None
        self._lines = 0
        self._progress.start()

    def phase(self, name: str, total: float | None = None, unit: str = "steps") -> None:
        """Finish the current line and start one for this phase."""
        self._finish_task()
        if name == "parse" and self._size is not None:
            total, unit = float(self._size), "bytes"
        self._unit, self._total, self._done = unit, total, 0.0
        self._step = None
        self._started = time.monotonic()
        self._task = self._progress.add_task(name, total=total, detail="", rate="")
        self._refresh()

    def advance(self, amount: float = 1, step: str | None = None) -> None:
        """Move the bar; show what runs next."""
        self._done += amount
        if step is not None:
            self._step = step
        self._refresh()

    def parsed(self, lines: int, position: int | None = None) -> None:
        """Lines read: the record count, and the bytes read when the size is known."""
        self._lines = lines
        if position is not None and self._size is not None:
            self._done = float(position)
        elif self._position is not None and self._size is not None:
            self._done = float(self._position())
        else:
            self._done = float(lines)
        self._refresh()

    def close(self) -> None:
        """Finish the last line and stop drawing (finished lines stay on screen)."""
        self._finish_task()
        self._progress.stop()

    def _refresh(self) -> None:
        """Push the current figures to the phase's line."""
        if self._task is None:
            return
        elapsed = max(time.monotonic() - self._started, 1e-6)
        description = self._progress.tasks[-1].description
        if description == "parse":
            detail = f"{self._lines:,} records"
            if self._unit == "bytes" and self._total:
                detail += f", {_amount(self._done, 'bytes')} of {_amount(self._total, 'bytes')}"
            rate = f"{self._lines / elapsed:,.0f} records/s"
        else:
            detail = _amount(self._done, self._unit)
            if self._total is not None:
                detail = f"{detail} of {_amount(self._total, self._unit)}"
            if self._step:
                detail += f": {self._step}"
            # A rate of steps says nothing (they differ by orders of magnitude); counts do.
            rate = ""
            if self._unit not in ("steps", "checks"):
                rate = f"{_amount(self._done / elapsed, self._unit)}/s"
        self._progress.update(self._task, completed=self._done, detail=detail, rate=rate)

    def _finish_task(self) -> None:
        """Mark the current phase complete (its total is what was done if it had none)."""
        if self._task is None:
            return
        if self._total is None:
            self._total = self._done
        self._done = self._total
        self._step = None
        self._refresh()
        self._progress.update(self._task, total=self._total, completed=self._total)
        self._progress.stop_task(self._task)
        self._task = None
