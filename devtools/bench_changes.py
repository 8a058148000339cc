"""What a change set costs a load (docs/loading.md, What the change set costs), in scratch databases
of its own.

python -m devtools.bench_changes --origins 1000000 [--fraction 0.01] [--baseline REV]

Three loads in a row, each by `registry load` in a process of its own: the demo (the first
generation: every origin added), its changed twin (the given share of origins removed, changed
or added) and a wholly different document (another seed: every origin removed and added). For
each: the load's time, its change set step and that step's share of the rest of the load, and
the change set's disk use beside the generation's. With --baseline REV, the demo and the twin
are first loaded by the code of revision REV (one from before change sets) from a git worktree
into a database of their own, so the twin's load time with and without change computing is
compared in the same run. Nothing asserts: it reports. The databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from devtools.bench_targets import demo_document, twin_document
from registry.database.conninfo import resolve_database_url, with_database
from registry.database.queries import QUERIES
from registry.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
_LOADED = re.compile(r"^loaded .* in ([0-9.]+) s \((.*)\)$", re.MULTILINE)


@contextmanager
def scratch_database(server: str, name: str) -> Iterator[str]:
    """A fresh database on the server, dropped afterwards."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def load(code: Path, conninfo: str, path: Path) -> tuple[float, dict[str, float]]:
    """`registry load path` run from the code in folder code: its time and phases (seconds)."""
    env = {**os.environ, "DATABASE_URL": conninfo, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", "load", str(path)],
        cwd=code, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"registry load {path.name} failed:\n{done.stdout}{done.stderr}")
    match = _LOADED.search(done.stdout)
    assert match is not None, done.stdout
    phases = dict(
        (name, float(seconds))
        for name, seconds in (part.rsplit(" ", 1) for part in match.group(2)[:-2].split(", "))
    )
    print(f"  {match.group(0)}", flush=True)
    for line in done.stdout.splitlines():
        if line.startswith(("added ", "removed ", "changed ")):
            print(f"    {line}", flush=True)
    return float(match.group(1)), phases


@contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """The code of revision in a git worktree of its own, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="registry-baseline-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), revision],
            cwd=REPO, check=True, capture_output=True,
        )  # fmt: skip
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)],
                cwd=REPO, check=False, capture_output=True,
            )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the loads and print their figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--baseline", metavar="REV", help="a revision from before change sets")
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    demo = demo_document(args.origins, args.seed, cache)
    twin = twin_document(args.origins, args.seed, cache, args.fraction)
    other = demo_document(args.origins, args.seed + 1, cache)
    server = resolve_database_url(load_settings())
    baseline_twin = None
    if args.baseline:
        print(f"baseline: the code of {args.baseline}, no change computing", flush=True)
        with (
            worktree(args.baseline) as tree,
            scratch_database(server, f"registry_bench_baseline_{args.origins}") as conninfo,
        ):
            load(tree, conninfo, demo)
            baseline_twin, _ = load(tree, conninfo, twin)
    with scratch_database(server, f"registry_bench_changes_{args.origins}") as conninfo:
        for label, path in (
            ("demo (first generation)", demo),
            (f"twin ({args.fraction:g} of the origins)", twin),
            ("wholly different document", other),
        ):
            print(f"{label}: {path.name}", flush=True)
            total, phases = load(REPO, conninfo, path)
            step = phases.get("changes", 0.0)
            rest = total - step
            print(f"  change set step {step:.1f} s: +{100 * step / rest:.1f} % over the rest "
                  f"of the load ({rest:.1f} s)", flush=True)  # fmt: skip
            if path == twin and baseline_twin is not None:
                print(f"  the same load without change computing ({args.baseline}): "
                      f"{baseline_twin:.1f} s; with: {total:.1f} s "
                      f"({100 * (total / baseline_twin - 1):+.1f} %)", flush=True)  # fmt: skip
            with psycopg.connect(conninfo, autocommit=True) as conn:
                row = conn.execute(QUERIES["meta/get_change_set_size"]).fetchone()
            assert row is not None
            changes, whole = int(row[0]), int(row[1])
            print(f"  change set on disk {changes / 1e6:.1f} MB of the generation's "
                  f"{whole / 1e6:.1f} MB ({100 * changes / whole:.1f} %)", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
