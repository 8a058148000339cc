"""The README's way of running the service for real is a safe one: gunicorn's sync workers
are never shown without nginx in front of them."""

from __future__ import annotations

from pathlib import Path

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
