"""`registry ARGS` run inside the test's own process, for the tests that call the command many
times to check what it does to a database and what it says.

A `registry` process spends about 0.2 s of CPU starting (psycopg's import alone is 0.12 s)
before it does anything; the files that ran it about 140 times a run spent most of their CPU
starting it, in each of CI's two runs (docs/ci.md). Here the same entry point,
`registry.cli.main`, runs with the given environment, standard input and argument list, its
output captured. What only a real process shows (the exit status through `sys.exit`, standard
input from a pipe, output from a process that exits) stays with subprocess tests:
`tests/loader/test_cli.py`, and one test in each file that uses this.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from typing import NamedTuple

from registry.cli import main


class Finished(NamedTuple):
    """How a command ended: exit status and its decoded output."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Both streams: where a line goes is not the interface's business."""
        return self.stdout + "\n" + self.stderr


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    stdin: bytes | str = b"",
    unset: Iterable[str] = (),
) -> Finished:
    """`registry ARGS` in this process: the environment as it is, without `unset`, plus `env`,
    for the call only; `stdin` as standard input; exit status and output as a process would
    give them (argparse's usage errors exit 2 with their message on standard error)."""
    saved = dict(os.environ)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    source = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    real_stdin = sys.stdin
    try:
        for name in unset:
            os.environ.pop(name, None)
        os.environ.update(env or {})
        sys.stdin = source
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:
                if isinstance(stop.code, str):
                    print(stop.code, file=sys.stderr)
                code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        sys.stdin = real_stdin
        os.environ.clear()
        os.environ.update(saved)
    return Finished(code, out.getvalue(), err.getvalue())
