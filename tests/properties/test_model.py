"""The model itself against the worked example, so that it can be trusted."""

from __future__ import annotations

import inspect
from typing import Any

import orjson
import pytest

from registry.database.search_text import fold_for_search
from tests.properties import model
from tests.properties.model import (
    RegistryModel,
    caseless,
    format_utc,
    parse_filters,
    search_matches,
    utc_instant,
)
from tests.properties.strategies import NAME_LETTERS


@pytest.fixture(scope="module")
def example_model(example_document: bytes) -> RegistryModel:
    """The model of examples/small-graph.jsonl."""
    return RegistryModel(orjson.loads(line) for line in example_document.splitlines())


def test_model_counts_the_worked_example(
    example_model: RegistryModel, example_expected: dict[str, Any]
) -> None:
    """Both summaries of the worked example, as documented."""
    assert {"success": True, **example_model.registry_summary()} == example_expected[
        "GET /registry/summary"
    ]
    assert example_model.integration_status() == example_expected["GET /summary"]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ({}, "GET /registry/origins (origin ids in order)"),
        ({"search": "tÉlÉ"}, "GET /registry/origins?search=t%C3%89L%C3%89 (origin ids)"),
        ({"search": "50%"}, "GET /registry/origins?search=50%25 (origin ids)"),
        (
            {"governance_state": "governed", "has_presentations": "false"},
            "GET /registry/origins?governance_state=governed&has_presentations=false (origin ids)",
        ),
    ],
)
def test_model_lists_the_worked_example(
    example_model: RegistryModel,
    example_expected: dict[str, Any],
    query: dict[str, str],
    key: str,
) -> None:
    """The worked example's listings, in the documented order."""
    listed = example_model.matching(parse_filters(query))
    assert [record["origin"]["id"] for record in listed] == example_expected[key]


def test_model_builds_the_worked_examples_records(
    example_model: RegistryModel, example_expected: dict[str, Any]
) -> None:
    """The worked example's records, field for field, by id and by address."""
    by_id = example_expected["GET /registry/origins/3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"]
    assert example_model.records[by_id["origin"]["origin"]["id"]] == by_id["origin"]
    sport = example_expected["GET /registry/origins/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"]
    assert example_model.records[sport["origin"]["origin"]["id"]] == sport["origin"]
    held = example_expected["GET /registry/addresses/9.10.3"]
    assert example_model.by_address(9, 10, 3) == held["origin"]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2026-03-14T09:30:00Z", "2026-03-14T09:30:00Z"),
        ("2026-03-14t09:30:00.000z", "2026-03-14T09:30:00Z"),
        ("2026-03-14T09:30:00.5+01:00", "2026-03-14T08:30:00.500000Z"),
        ("2026-03-14T00:10:00.1234569-00:30", "2026-03-14T00:40:00.123456Z"),
        ("0999-12-31T23:00:00-01:00", "1000-01-01T00:00:00Z"),
    ],
)
def test_model_writes_date_times_in_utc(written: str, utc: str) -> None:
    """held.at: UTC with Z, a fraction only when there is one, digits past the sixth cut."""
    assert format_utc(utc_instant(written)) == utc


@pytest.mark.parametrize(
    ("term", "name", "registry_id", "found"),
    [
        ("tÉlÉ", "Télé Nord", None, True),
        ("TE\u0301LE\u0301", "Télé Nord", None, True),
        ("e", "Télé", None, False),
        ("SS", "Straße", None, True),
        ("ΣΑΣ", "σας", None, True),
        ("%", "Pop-up 50%", None, True),
        ("_", "Pop-up 50%", None, False),
        ("\\", "a\\b", None, True),
        ("10", "Harbour", "10", True),
        ("x", "Harbour", None, False),
    ],
)
def test_model_searches_caselessly_and_literally(
    term: str, name: str, registry_id: str | None, found: bool
) -> None:
    """search: a case-insensitive literal substring of the name or the registry id."""
    assert search_matches(term, name, registry_id) is found
    assert caseless(term) == caseless(caseless(term))


def test_model_folding_is_its_own_statement() -> None:
    """The model folds from its own table, not with the service's tools (unicodedata and
    str.casefold), so that it cannot share a mistake with the service's code."""
    source = inspect.getsource(model)
    assert "unicodedata" not in source and ".casefold(" not in source
    assert "registry.database.search_text" not in source
    text = (
        "TE\u0301L\u00c9 Stra\u00dfe \u1e9e \u017f \u212a \u03a3\u0391\u03a3 \u03c2 \u041a \u0130"
    )
    folded = "t\u00e9l\u00e9 strasse ss s k \u03c3\u03b1\u03c3 \u03c3 \u043a i\u0307"
    assert caseless(text) == folded
    assert "casefold" not in inspect.getsource(caseless)


def test_service_folding_agrees_with_the_model_table() -> None:
    """Every character (and pair) the generated graphs and terms can hold, and every case
    change of them, folds the same by the service's rule and by the model's table."""
    texts = {
        change(letter)
        for letter in NAME_LETTERS
        for change in (str, str.upper, str.lower, str.swapcase, str.casefold)
    }
    texts |= {first + second for first in texts for second in texts}
    for text in sorted(texts):
        assert fold_for_search(text) == caseless(text), text
