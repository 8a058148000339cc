"""The README's way of running the service for real is a safe one: gunicorn's sync workers
are never shown without nginx in front of them; its configuration table is complete."""

from __future__ import annotations

import re
from pathlib import Path

from registry.settings import DEFAULTS

README = Path(__file__).resolve().parents[2] / "README.md"


def section(title: str) -> str:
    """The text of one `## ` section of the README."""
    text = README.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_running_it_for_real_puts_nginx_next_to_gunicorn():
    """The section that starts gunicorn also installs nginx and says why gunicorn must not
    face clients itself."""
    text = section("Running it for real")
    assert "gunicorn wsgi:app" in text
    block = text[text.index("gunicorn wsgi:app") :]
    assert "deploy/nginx.conf" in block.split("\n\n")[0]  # in the same code block
    assert "Never expose gunicorn itself" in text
    assert "slow" in text and "127.0.0.1:8000" in text


def variables_read() -> set[str]:
    """Every environment variable the service reads: registry/settings.py's, and those
    gunicorn.conf.py reads for gunicorn itself."""
    conf = (README.parent / "gunicorn.conf.py").read_text()
    found = re.findall(r"""environ(?:\.get\(|\.setdefault\(|\[)\s*["']([A-Z_]+)["']""", conf)
    return set(DEFAULTS) | set(found)


def test_the_configuration_table_names_every_variable_read():
    """The section says nothing but the environment is read, so its table names each
    variable that is."""
    text = section("Configuration")
    missing = sorted(name for name in variables_read() if f"`{name}`" not in text)
    assert not missing, missing
    assert {"REGISTRY_THREADS", "REGISTRY_WORKER_CLASS", "REGISTRY_BIND"} <= variables_read()
