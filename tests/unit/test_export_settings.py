"""REGISTRY_EXPORT_SEND_TIMEOUT_S is refused at start-up unless it is finite, above 0 and
below gunicorn's timeout (docs/export.md, Capacity: only a client that stops reading for the send
timeout loses its export, and the worker timeout must not end it first)."""

from __future__ import annotations

import pytest

from app import create_app
from registry.settings import DEFAULTS, SettingsError, settings_from_environ
from tests.conftest import TEST_SECRET


@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "nan", "inf", "-inf", "30", "45"])
def test_a_send_timeout_that_is_not_finite_positive_and_below_the_worker_timeout_is_refused(
    value: str,
):
    """0 or less (the send timeout off), nan or inf (every export failing), or at or past
    gunicorn's timeout of 30 s: refused, naming the setting and the bound."""
    with pytest.raises(SettingsError) as refused:
        settings_from_environ(
            {"REGISTRY_EXPORT_SEND_TIMEOUT_S": value, "REGISTRY_GUNICORN_TIMEOUT": "30"}
        )
    message = str(refused.value)
    assert message.startswith("REGISTRY_EXPORT_SEND_TIMEOUT_S must be a finite number")
    assert "below REGISTRY_GUNICORN_TIMEOUT (30)" in message


def test_the_bound_is_the_worker_timeout_in_force():
    """A shorter worker timeout refuses the default send timeout; a value under it passes."""
    assert DEFAULTS["REGISTRY_GUNICORN_TIMEOUT"] == 150
    assert DEFAULTS["REGISTRY_EXPORT_SEND_TIMEOUT_S"] < DEFAULTS["REGISTRY_GUNICORN_TIMEOUT"]
    with pytest.raises(SettingsError, match=r"below REGISTRY_GUNICORN_TIMEOUT \(10\)"):
        settings_from_environ({"REGISTRY_GUNICORN_TIMEOUT": "10"})
    found = settings_from_environ(
        {"REGISTRY_GUNICORN_TIMEOUT": "10", "REGISTRY_EXPORT_SEND_TIMEOUT_S": "9.5"}
    )
    assert found["REGISTRY_EXPORT_SEND_TIMEOUT_S"] == 9.5
    assert found["REGISTRY_GUNICORN_TIMEOUT"] == 10
    assert settings_from_environ({"REGISTRY_EXPORT_SEND_TIMEOUT_S": "149.9"})[
        "REGISTRY_EXPORT_SEND_TIMEOUT_S"
    ] == pytest.approx(149.9)
    with pytest.raises(SettingsError, match="REGISTRY_GUNICORN_TIMEOUT must be at least 1"):
        settings_from_environ({"REGISTRY_GUNICORN_TIMEOUT": "0"})


def test_the_app_refuses_a_bad_send_timeout_given_as_configuration():
    """create_app's own configuration (what tests and embedders pass) is held to it too."""
    with pytest.raises(SettingsError, match="REGISTRY_EXPORT_SEND_TIMEOUT_S"):
        create_app(
            {"REGISTRY_JWT_SECRET": TEST_SECRET, "REGISTRY_EXPORT_SEND_TIMEOUT_S": float("nan")}
        )
