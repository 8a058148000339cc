"""REGISTRY_KEEP_CHANGES and REGISTRY_KEEP_GENERATIONS are checked at start-up (docs/api.md, Changes
since any generation: change sets kept from 1 to 1000, never fewer than the graphs kept)."""

from __future__ import annotations

import pytest

from registry.settings import SettingsError, keep_changes, load_settings, settings_from_environ


@pytest.mark.parametrize("name", ["REGISTRY_KEEP_CHANGES", "REGISTRY_KEEP_GENERATIONS"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "must be at least 1, not '0'"),
        ("-3", "must be at least 1, not '-3'"),
        ("1001", "must be at most 1000, not '1001'"),
        ("many", "must be a number, not 'many'"),
    ],
)
def test_a_value_out_of_bounds_is_refused_naming_the_setting(
    name: str, value: str, message: str
) -> None:
    """0, a negative, past 1000 or not a number: refused with the setting's name and bound."""
    with pytest.raises(SettingsError) as refused:
        settings_from_environ({name: value})
    assert str(refused.value) == f"{name} {message}"


@pytest.mark.parametrize("name", ["REGISTRY_KEEP_CHANGES", "REGISTRY_KEEP_GENERATIONS"])
def test_the_bounds_themselves_are_accepted(name: str) -> None:
    """1 and 1000 are both allowed."""
    assert settings_from_environ({name: "1"})[name] == 1
    assert settings_from_environ({name: "1000"})[name] == 1000


@pytest.mark.parametrize(
    ("changes", "generations", "kept"),
    [(None, None, 30), ("5", None, 5), ("1", "4", 4), ("3", "3", 3), ("1000", "1000", 1000)],
)
def test_change_sets_kept_are_never_fewer_than_graphs_kept(
    monkeypatch: pytest.MonkeyPatch, changes: str | None, generations: str | None, kept: int
) -> None:
    """The default is 30; a value below REGISTRY_KEEP_GENERATIONS is raised to it, and with
    both bounded by 1000 the change sets kept never pass 1000."""
    for name, value in (
        ("REGISTRY_KEEP_CHANGES", changes),
        ("REGISTRY_KEEP_GENERATIONS", generations),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert keep_changes(load_settings()) == kept
