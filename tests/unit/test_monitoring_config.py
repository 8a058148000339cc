"""deploy/prometheus.yml and deploy/alerts.yml as promtool sees them, and the alerts' logic."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.tools import require_tool

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def promtool() -> str:
    """The promtool executable (Debian's prometheus package)."""
    binary = shutil.which("promtool")
    require_tool(binary, "promtool", "prometheus")
    assert binary is not None
    return binary


@pytest.mark.parametrize(
    "arguments",
    [
        ("check", "config", "deploy/prometheus.yml"),
        ("check", "rules", "deploy/alerts.yml"),
        ("test", "rules", "tests/fixtures/alerts.test.yml"),
    ],
    ids=["scrape-config", "alert-rules", "alert-rule-tests"],
)
def test_promtool_accepts(promtool: str, arguments: tuple[str, ...]) -> None:
    """promtool finds nothing wrong (and the rule tests pass)."""
    run = subprocess.run([promtool, *arguments], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
