"""REGISTRY_PROPERTY_EXAMPLES_SHARE: how many examples each property draws (CI's second run
draws a quarter). A share that would draw none, or more than all, is refused, not taken."""

from __future__ import annotations

import pytest

from tests.properties.strategies import EXAMPLES_SHARE, examples


def test_every_example_is_drawn_unless_a_share_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXAMPLES_SHARE, raising=False)
    assert examples(60) == 60


@pytest.mark.parametrize(
    ("share", "count", "drawn"),
    [("0.5", 60, 30), ("0.5", 15, 8), ("0.25", 12, 3), ("1", 12, 12), ("0.01", 12, 1)],
)
def test_a_share_scales_the_examples_and_never_below_one(
    monkeypatch: pytest.MonkeyPatch, share: str, count: int, drawn: int
) -> None:
    monkeypatch.setenv(EXAMPLES_SHARE, share)
    assert examples(count) == drawn


@pytest.mark.parametrize("share", ["0", "-0.5", "1.5", "nan", "inf", "half", ""])
def test_a_share_outside_zero_to_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, share: str
) -> None:
    monkeypatch.setenv(EXAMPLES_SHARE, share)
    with pytest.raises(ValueError, match=EXAMPLES_SHARE):
        examples(60)
