"""An export's progress against its `Registry-Total`: a bar on a terminal, nothing elsewhere."""

from __future__ import annotations

from typing import Any, TextIO


class NoProgress:
    """Nothing shown (standard error is a file, a pipe or a journal)."""

    def start(self, total: int) -> None:
        """Nothing."""

    def advance(self, rows: int) -> None:
        """Nothing."""

    def stop(self) -> None:
        """Nothing."""


class TerminalProgress:
    """A rich progress bar on standard error, gone once the export ends (its line stays)."""

    def __init__(self, stream: TextIO):
        from rich.console import Console

        self.console = Console(file=stream)
        self.bar: Any = None
        self.task: Any = None

    def start(self, total: int) -> None:
        """Show a bar of `total` origins."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self.bar = Progress(
            "exporting",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.task = self.bar.add_task("export", total=total)
        self.bar.start()

    def advance(self, rows: int) -> None:
        """`rows` more origins written."""
        if self.bar is not None:
            self.bar.advance(self.task, rows)

    def stop(self) -> None:
        """Remove the bar."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def progress_for(stream: TextIO) -> NoProgress | TerminalProgress:
    """A bar when `stream` is a terminal, else nothing."""
    return TerminalProgress(stream) if stream.isatty() else NoProgress()
