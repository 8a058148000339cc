"""gunicorn refuses to start on an export send timeout it cannot honour (docs/export.md, Capacity):
the message names the setting and the bound, the exit is non-zero, and no worker ever serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.production_stack import free_port
from tests.conftest import TEST_SECRET

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("send_timeout", "worker_timeout"), [("nan", "30"), ("0", "30"), ("12", "10")]
)
def test_gunicorn_refuses_a_send_timeout_it_cannot_honour(
    tmp_path: Path, send_timeout: str, worker_timeout: str
):
    """nan, 0, or not below the worker timeout: gunicorn exits at once, non-zero, saying so."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
        "REGISTRY_JWT_SECRET": TEST_SECRET,
        "REGISTRY_STATE_DIR": str(tmp_path),
        "REGISTRY_EXPORT_SEND_TIMEOUT_S": send_timeout,
        "REGISTRY_GUNICORN_TIMEOUT": worker_timeout,
    }
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{free_port()}", "wsgi:app"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "registry: cannot start: " in done.stderr
    assert "REGISTRY_EXPORT_SEND_TIMEOUT_S must be a finite number of seconds above 0" in (
        done.stderr
    )
    assert f"below REGISTRY_GUNICORN_TIMEOUT ({worker_timeout})" in done.stderr
    assert "Booting worker" not in done.stderr
