"""/openapi.json: GET /registry/changes and GET /registry/generations (docs/api.md, Changes between
generations and The generation list). `registry.api.openapi` calls `add_change_paths` with its own
operation builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apispec import APISpec

from registry.api.openapi_components import CHANGE_EXPORT_CONTENT, header, json_body_response
from schemas.changes import BLOCKS, KINDS, ChangeListQuerySchema

# kind and block as one exploded object (?kind=changed&block=bans), so that the document can
# say what a list of parameters cannot: block only with kind=changed or no kind (docs/api.md,
# Changes between generations).
CHANGE_FILTERS = {
    "in": "query",
    "name": "filters",
    "style": "form",
    "explode": True,
    "description": "kind and block, each optional: block only with kind=changed or alone",
    # Empty, so that the /docs page's "Try it out" sends neither until the caller fills them.
    "example": {},
    "schema": {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(KINDS),
                     "description": "added, removed or changed"},
            "block": {"type": "string", "enum": list(BLOCKS),
                      "description": "changed origins whose record differs in this block"},
        },
        "additionalProperties": False,
        "if": {"required": ["block"]},
        "then": {"properties": {"kind": {"const": "changed"}}},
    },
}  # fmt: skip


def add_change_paths(
    spec: APISpec, operation: Callable[..., dict[str, Any]], pinned: dict[str, Any]
) -> None:
    """GET /registry/changes and GET /registry/generations (docs/api.md, Changes between generations
    and The generation list), built with operation (the document's operation builder); pinned is the
    generation parameter."""
    changes = json_body_response(
        "ChangeList",
        "one page of the changes that produced the generation, by origin id, or with since=m "
        "of the net changes from generation m to it (docs/api.md, Changes since any generation); "
        "counts are the whole generation's (the net changes' with since), page.total the "
        "filtered count",
        {
            "Link": {
                **header(
                    'with every JSON page: RFC 8288 links rel="first", "prev", "next", "last", '
                    "kind, block, since and limit kept, and generation=<Registry-Generation>"
                ),
                "required": False,
            },
            "Registry-Total": {
                **header("with every NDJSON or CSV export: the number of rows that follow",
                         "integer"),
                "required": False,
            },
        },
    )  # fmt: skip
    changes["description"] += (
        ". With Accept: application/x-ndjson or text/csv, every matching change instead, "
        "streamed in one answer (page and limit are then a 400)"
    )
    changes["content"].update(CHANGE_EXPORT_CONTENT)
    changes_operation = operation(
        "listChanges",
        "How a generation differs from its previous one: origins added, removed and changed",
        changes,
        secured=True,
        parameters=[
            CHANGE_FILTERS,
            {"in": "query", "schema": ChangeListQuerySchema(exclude=("kind", "block"))},
        ],
        generational=True,
    )
    changes_operation["responses"]["406"] = {"$ref": "#/components/responses/NotAcceptable"}
    changes_operation["responses"]["404"] = json_body_response(
        "ChangesNotFound",
        "generation or since names a generation this registry never produced (details say "
        "which, and which is current); a malformed one is a 400",
    )
    changes_operation["responses"]["410"] = json_body_response(
        "ChangesGoneOrGenerationGone",
        "generation names one no longer kept (GenerationGone), or since is older than the "
        "oldest since of the generation answered (ChangesGone: start again from an export, "
        "whose Registry-Generation is the next since)",
    )
    spec.path("/registry/changes", operations={"get": changes_operation})
    generations = operation(
        "listGenerations",
        "Every kept generation, newest first, with its previous and change counts",
        json_body_response(
            "GenerationList",
            "the kept generations; with generation=n, those up to n, and current is n",
        ),
        secured=True,
        parameters=[pinned],
        generational=True,
    )
    spec.path("/registry/generations", operations={"get": generations})
