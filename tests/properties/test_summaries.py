"""GET /registry/summary and GET /summary for generated graphs, against the model."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hypothesis import given, settings

from tests.properties.model import RegistryModel
from tests.properties.strategies import PROPERTY_SETTINGS, examples, graph_documents

if TYPE_CHECKING:
    from tests.properties.conftest import LoadedGraph

UTC_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)\Z")


def without_generated_at(body: dict[str, Any]) -> dict[str, Any]:
    """The body minus generated_at, which must be an RFC 3339 UTC date-time when present."""
    body = dict(body)
    generated_at = body.pop("generated_at", None)
    assert generated_at is None or UTC_DATE_TIME.match(generated_at), generated_at
    return body


@settings(PROPERTY_SETTINGS, max_examples=examples(60))
@given(records=graph_documents())
def test_summaries_count_what_the_model_counts(
    registry_graph: LoadedGraph, records: list[dict[str, Any]]
) -> None:
    """Registry counts and the integration status, field for field, nulls included."""
    registry_graph.load(records)
    model = RegistryModel(records)
    registry = registry_graph.get_json("/registry/summary")
    assert without_generated_at(registry) == {"success": True, **model.registry_summary()}
    # The public endpoint needs no token, and is unrelated to the registry counts.
    public = registry_graph.get_json("/summary", admin=False)
    assert without_generated_at(public) == model.integration_status()
