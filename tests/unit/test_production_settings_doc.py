"""docs/authentication.md tells an operator, among the settings for production, which defaults
are permissive: the audience is not checked unless configured, and /metrics has no token."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "authentication.md"


def production_settings() -> str:
    """The text of the page's section on settings for production."""
    text = DOC.read_text()
    start = text.index("## Settings for production\n")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start : end if end != -1 else None].split())


def test_the_unchecked_audience_is_named_with_its_consequence():
    """Without REGISTRY_JWT_AUDIENCE a token minted for another service sharing the key is
    accepted: the section says so and says to set it."""
    section = production_settings()
    assert "`REGISTRY_JWT_AUDIENCE`" in section
    assert "`aud` is not checked" in section
    assert "another service" in section and "shares the key" in section


def test_the_open_metrics_endpoint_is_named_with_what_it_shows():
    """/metrics on gunicorn's port has no token and carries build information."""
    section = production_settings()
    assert "`/metrics`" in section and "no token" in section
    assert "`registry_build_info`" in section
    assert "gunicorn's port" in section
