"""What gunicorn.conf.py gives the app, read as gunicorn reads it (in a child: the file sets
environment variables for gunicorn)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def raw_env(**settings: str) -> dict[str, str]:
    """The environment gunicorn.conf.py passes to the workers, with these variables set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(settings, PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp())
    code = "import runpy; print('\\n'.join(runpy.run_path('gunicorn.conf.py')['raw_env']))"
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return dict(line.split("=", 1) for line in shown.stdout.splitlines())


@pytest.mark.parametrize(
    ("workers", "threads", "exports"),
    [("1", "1", "1"), ("2", "1", "1"), ("5", "1", "2"), ("9", "1", "4"), ("5", "4", "2"),
     ("3", "8", "1")],
)  # fmt: skip
def test_the_export_limit_is_half_the_workers_at_least_one(
    workers: str, threads: str, exports: str
) -> None:
    """Unset, REGISTRY_MAX_EXPORTS is half of the workers, rounded down, at least 1 (docs/export.md,
    Capacity), whatever threads each worker runs."""
    given = raw_env(REGISTRY_WORKERS=workers, REGISTRY_THREADS=threads)
    assert given["REGISTRY_MAX_EXPORTS"] == exports


def test_an_explicit_export_limit_is_kept() -> None:
    """REGISTRY_MAX_EXPORTS set: passed on as it is."""
    assert raw_env(REGISTRY_WORKERS="5", REGISTRY_MAX_EXPORTS="7")["REGISTRY_MAX_EXPORTS"] == "7"


@pytest.mark.parametrize("threads", ["1", "4"])
def test_a_worker_takes_no_more_connections_than_it_has_threads(threads: str) -> None:
    """gthread workers (REGISTRY_THREADS) take as many connections as they have threads, so
    one whose threads all stream exports does not take requests it cannot answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_THREADS=threads, PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp())
    code = "import runpy; print(runpy.run_path('gunicorn.conf.py')['worker_connections'])"
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == threads
