"""The one rule for tests that need a program from Debian (nginx, Prometheus, promtool,
Chromium, PgBouncer, the PostgreSQL binaries): skip, saying what to install, where it is
missing; fail where CI installed it, so that a missing tool can never pass silently.

`.ci/run` installs every such program and sets REGISTRY_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import os

import pytest

REQUIRED = os.environ.get("REGISTRY_REQUIRE_TOOLS") == "1"


def require_tool(found: object, what: str, install: str) -> None:
    """Go on when found is truthy; else fail under REGISTRY_REQUIRE_TOOLS=1, skip elsewhere."""
    if found:
        return
    message = f"{what} is not installed (Debian: apt-get install {install})"
    if REQUIRED:
        pytest.fail(f"{message}; .ci/run installs it (REGISTRY_REQUIRE_TOOLS=1)")
    pytest.skip(message)
