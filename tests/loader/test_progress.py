"""The progress display of long commands, on a real pseudo-terminal (and its absence in a pipe)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# CSI sequences (colours, cursor moves) and other escapes rich uses to redraw.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
LOAD_PHASES = ("parse", "copy", "check", "read model", "indexes", "change set", "publish")


def run_on_terminal(arguments: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Run `registry ARGUMENTS` with a pseudo-terminal of 140 columns as its terminal.

    Returns the exit status and what a terminal would show at the end: the output with escape
    codes removed, each redrawn line reduced to its last state.
    """
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "registry.cli", *arguments],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=ROOT,
        # The terminal's own size, not a COLUMNS or LINES inherited from the test runner
        # (pytest-xdist's workers have them), which rich would prefer.
        env={
            **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
            "TERM": "xterm-256color",
            **env,
        },
        close_fds=True,
    )
    os.close(terminal)
    output = bytearray()
    while True:
        ready, _, _ = select.select([controller], [], [], 120)
        if not ready:
            process.kill()
            raise AssertionError("the command went silent for 2 minutes")
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    status = process.wait(timeout=60)
    text = ANSI.sub("", output.decode(errors="replace")).replace("\r\n", "\n")
    lines = [line.split("\r")[-1].rstrip() for line in text.split("\n")]
    return status, [line for line in lines if line]


def final_line(lines: list[str], phase: str) -> str:
    """The last state of the line of one phase."""
    found = [line for line in lines if line.startswith(phase + " ") or line == phase]
    assert found, f"no line for {phase!r} in:\n" + "\n".join(lines)
    return found[-1]


def test_load_shows_every_phase_on_a_terminal(
    database_factory: Callable[[], str], tmp_path: Path
) -> None:
    """Each phase has its line, completed, with its counts, a rate and the time left."""
    document = tmp_path / "demo.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", "demo", "--origins", "3000", "--out", str(document)],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    assert done.stderr == b""  # not a terminal: no progress
    conninfo = database_factory()
    status, lines = run_on_terminal(["load", str(document)], {"DATABASE_URL": conninfo})
    assert status == 0, "\n".join(lines)
    shown = [phase for phase in LOAD_PHASES if any(line.startswith(phase) for line in lines)]
    assert shown == list(LOAD_PHASES)
    size_mb = f"{document.stat().st_size / 1_000_000:,.1f} MB"
    parse = final_line(lines, "parse")
    assert "100%" in parse and "records/s" in parse and f"of {size_mb}" in parse
    lines_in_document = len(document.read_bytes().splitlines())
    assert f" {lines_in_document:,} records, " in parse
    assert "100%" in final_line(lines, "copy") and "MB/s" in final_line(lines, "copy")
    check = final_line(lines, "check")
    assert re.search(r"10 checks of 10 checks", check), check
    assert "6 steps of 6 steps" in final_line(lines, "read model")
    assert "3 steps of 3 steps" in final_line(lines, "indexes")
    assert "3 steps of 3 steps" in final_line(lines, "publish")
    for phase in LOAD_PHASES:
        assert "left" in final_line(lines, phase)
    # After the progress lines: the summary, then the generation lines.
    summary = [number for number, line in enumerate(lines) if line.startswith("loaded ")]
    assert summary and summary[0] > max(
        number for number, line in enumerate(lines) if line.startswith("publish")
    )


def test_demo_shows_origins_written_on_a_terminal(tmp_path: Path) -> None:
    """registry demo: one line, origins written of those asked for."""
    out = tmp_path / "demo.jsonl"
    status, lines = run_on_terminal(["demo", "--origins", "2000", "--out", str(out)], {})
    assert status == 0
    demo = final_line(lines, "demo")
    assert "100%" in demo and "origins/s" in demo
    assert re.search(r"[\d,]+ origins of 2,000 origins", demo), demo
    assert out.stat().st_size > 0
