"""GET /openapi.json: a valid OpenAPI 3.1 document, generated from the marshmallow schemas,
that says exactly what the tables of docs/api.md say; and the checker the other tests rely on."""

from __future__ import annotations

import copy
import re
from typing import Any

import orjson
import pytest
from flask import Flask
from openapi_spec_validator import validate

from registry.api.openapi import build_openapi_document, served_document
from schemas.params import FACET_NAMES, ORIGIN_ID_FORMAT
from tests.api.api_support import CheckedClient, OpenApiConformance

REQ, OPT = True, False

# The tables of docs/api.md, Records and Summaries: field -> (type, required). A nullable field is
# always present (docs/api.md, Records), so it is required here, and an optional one is not.
SPEC_TABLES: dict[str, dict[str, tuple[str, bool]]] = {
    "IntegrationStatus": {
        "success": ("boolean", REQ),
        "connected": ("boolean", REQ),
        **dict.fromkeys(
            (
                "networks",
                "iptv_networks",
                "ovp_networks",
                "channels",
                "programs",
                "reviews",
                "pending_reviews",
            ),
            ("integer", OPT),
        ),
        "generated_at": ("string", OPT),
    },
    "RegistrySummary": {
        "success": ("boolean", REQ),
        "generated_at": ("string", OPT),
        "canonical_origins": ("integer", REQ),
        "reviewed_origins": ("integer", REQ),
        "governed_origins": ("integer", REQ),
        "eligible_unallocated": ("integer", OPT),
        "bans_allocated": ("integer", REQ),
        "published": ("integer", REQ),
        "held": ("integer", REQ),
        "catalog_carriages": ("integer|null", REQ),
        "resolved_carriages": ("integer|null", REQ),
        "unresolved_carriages": ("integer|null", REQ),
        "transport_inventory": ("TransportInventory", REQ),
        "resolved_presentations": ("ResolvedPresentations", REQ),
    },
    "TransportInventory": dict.fromkeys(("iptv", "ovp", "ota", "fast"), ("integer|null", REQ)),
    "ResolvedPresentations": dict.fromkeys(("iptv", "ovp", "ota", "fast"), ("integer", REQ)),
    "Origin": {
        "origin": ("OriginIdentity", REQ),
        "governance": ("Governance", REQ),
        "bans": ("BansAllocation", REQ),
        "presentations": ("array of Presentation", REQ),
    },
    "OriginIdentity": {
        "id": ("string", REQ),
        "name": ("string", REQ),
        "registry_id": ("string|null", REQ),
        "network": ("NetworkRef", REQ),
    },
    "NetworkRef": {"id": ("string|null", REQ), "name": ("string|null", REQ)},
    "Governance": {"state": ("string", REQ), "active_edges": ("integer", REQ)},
    "BansAllocation": {
        "allocated": ("boolean", REQ),
        "address": ("string|null", REQ),
        "network": ("integer|null", REQ),
        "station": ("integer|null", REQ),
        "channel": ("integer|null", REQ),
        "publication_status": ("string|null", REQ),
        "held": ("Held|null", REQ),
    },
    "Held": {"at": ("string", REQ), "reason": ("string|null", REQ)},
    "Presentation": {
        "carriage_id": ("string", REQ),
        "transport": ("string", REQ),
        "provider": ("string|null", REQ),
        "source": ("string|null", REQ),
        "availability": ("string|null", REQ),
    },
    "OriginEnvelope": {
        "success": ("boolean", REQ),
        "generated_at": ("string", OPT),
        "origin": ("Origin", REQ),
    },
    "OriginList": {
        "success": ("boolean", REQ),
        "generated_at": ("string", OPT),
        "page": ("Page", REQ),
        "filters_applied": ("object", OPT),
        "origins": ("array of Origin", REQ),
        # docs/api.md, Facets and ids: only with facet.
        "facets": ("object", OPT),
    },
    "Page": dict.fromkeys(("page", "limit", "offset", "returned", "total"), ("integer", REQ)),
    "Error": {"success": ("boolean", REQ), "error": ("string", REQ)},
    # docs/api.md, Errors; docs/export.md, Capacity: an export past REGISTRY_MAX_EXPORTS adds a
    # message naming the limit.
    "ServiceUnavailable": {
        "success": ("boolean", REQ),
        "error": ("string", REQ),
        "message": ("string", OPT),
    },
    "InvalidParameters": {
        "success": ("boolean", REQ),
        "error": ("string", REQ),
        "details": ("object", REQ),
    },
    "Unauthorized": {"error": ("string", REQ)},
    "Forbidden": {"error": ("string", REQ), "message": ("string", OPT)},
    # docs/api.md, Errors and Generations and conditional requests: 410 for a generation no longer
    # kept.
    "GenerationGone": {
        "success": ("boolean", REQ),
        "error": ("string", REQ),
        "details": ("GenerationDetails", REQ),
    },
    # docs/api.md, Errors and Generations and conditional requests: 404 for a well-formed generation
    # never produced.
    "GenerationNotFound": {
        "success": ("boolean", REQ),
        "error": ("string", REQ),
        "details": ("GenerationDetails", REQ),
    },
    "GenerationDetails": {
        "generation": ("integer", REQ),
        "current": ("integer|null", REQ),
    },
}

ENUMS = [
    ("Governance", "state", ["governed", "ungoverned"]),
    ("BansAllocation", "publication_status", ["published", "held", None]),
    ("Presentation", "transport", ["iptv", "ovp", "ota", "fast"]),
    ("Unauthorized", "error", ["Unauthorized"]),
    ("Forbidden", "error", ["Domain admin access required"]),
    ("InvalidParameters", "error", ["Invalid request parameters"]),
    ("IntegrationStatus", "success", [True]),
    ("RegistrySummary", "success", [True]),
    ("OriginEnvelope", "success", [True]),
    ("OriginList", "success", [True]),
    ("Error", "success", [False]),
    ("GenerationNotFound", "error", ["Generation not found"]),
]

# docs/api.md, Listing origins: name -> (type, enum, minimum, maximum, default).
LISTING_PARAMETERS = {
    "governance_state": ("string", ["governed", "ungoverned"], None, None, None),
    "allocation_state": ("string", ["allocated", "unallocated"], None, None, None),
    "publication_status": ("string", ["published", "held"], None, None, None),
    "transport": ("string", ["iptv", "ovp", "ota", "fast"], None, None, None),
    "has_presentations": ("boolean", None, None, None, None),
    "network_id": ("string", None, None, None, None),
    "station_id": ("integer", None, 0, 2147483647, None),
    "search": ("string", None, None, None, None),
    # docs/api.md, Facets and ids: a comma-separated list; facet and facet_size as one object.
    "id": ("array", None, None, None, None),
    "facet_options": ("object", None, None, None, None),
    "page": ("integer", None, 1, 2147483647, 1),
    "limit": ("integer", None, 1, 200, 50),
    "generation": ("integer", None, 1, 2**63 - 1, None),
}

PUBLIC, ADMIN = {"200", "400", "405", "500", "503"}, {"401", "403"}
# docs/api.md, Generations and conditional requests: answers read from a generation may be 304; a
# pinned /registry read may be 404 (never produced) or 410 (no longer kept).
CACHED, PINNED = {"304"}, {"304", "404", "410"}
OPERATIONS = {
    "/summary": ("getIntegrationStatus", "IntegrationStatus", PUBLIC | CACHED),
    "/registry/summary": ("getRegistrySummary", "RegistrySummary", PUBLIC | ADMIN | PINNED),
    "/registry/origins": ("listOrigins", "OriginList", PUBLIC | ADMIN | PINNED | {"406"}),
    "/registry/origins/{originId}": (
        "getOrigin",
        "OriginEnvelope",
        PUBLIC | ADMIN | PINNED,
    ),
    "/registry/addresses/{address}": (
        "getOriginByAddress",
        "OriginEnvelope",
        PUBLIC | ADMIN | PINNED,
    ),
    # docs/api.md, Changes between generations.
    "/registry/changes": ("listChanges", "ChangeList", PUBLIC | ADMIN | PINNED | {"406"}),
    "/registry/generations": ("listGenerations", "GenerationList", PUBLIC | ADMIN | PINNED),
    # docs/api.md, Changes since any generation.
    "/registry/origins/{originId}/history": (
        "getOriginHistory",
        "OriginHistory",
        PUBLIC | ADMIN | PINNED,
    ),
    "/openapi.json": ("getOpenApiDocument", None, PUBLIC - {"503"}),
    "/healthz": ("getLiveness", None, PUBLIC - {"503"}),
    "/readyz": ("getReadiness", None, PUBLIC),
}


def kind(schema: dict[str, Any]) -> str:
    """A property's type in the tables' shorthand."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "anyOf" in schema:
        return "|".join(kind(branch) for branch in schema["anyOf"])
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if types == ["array"]:
        return f"array of {kind(schema['items'])}"
    return "|".join(types)


def resolve(document: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """Follow a local $ref."""
    while "$ref" in item:
        node: Any = document
        for part in item["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        item = node
    return item


def test_document_is_valid_openapi_31(api_document: dict[str, Any]):
    """openapi-spec-validator accepts it; OpenAPI 3.1.0, info.version 1.0.0."""
    validate(api_document)
    assert api_document["openapi"] == "3.1.0"
    assert api_document["info"]["version"] == "1.0.0"


def test_served_document_is_the_generated_one(api_document: dict[str, Any]):
    """The service serves what apispec builds from the schemas, nothing hand-kept, naming
    the server it was served from."""
    assert api_document == served_document("http://localhost")
    assert {**api_document, "servers": []} == {**build_openapi_document(), "servers": []}


@pytest.mark.parametrize(
    ("base_url", "host", "server"),
    [
        ("http://localhost", None, "http://localhost"),
        ("https://api.example", None, "https://api.example"),
        ("http://127.0.0.1:8000", None, "http://127.0.0.1:8000"),
        # behind nginx: SCRIPT_NAME carries the prefix
        ("https://api.example/v1", None, "https://api.example/v1"),
        ("https://api.example:8443/v1", None, "https://api.example:8443/v1"),
        # werkzeug finds no valid host in these: the path alone is left
        ("http://localhost/v1", "bad>host", "/v1"),
        ("http://localhost", "two words", "/"),
    ],
)
def test_servers_is_the_absolute_root_the_request_reached(
    example_app: Flask, base_url: str, host: str | None, server: str
):
    """Tools that do not resolve a relative server URL find the server the document names."""
    headers = {"Host": host} if host else {}
    response = example_app.test_client().get("/openapi.json", base_url=base_url, headers=headers)
    assert response.status_code == 200
    servers = orjson.loads(response.get_data())["servers"]
    assert [entry["url"] for entry in servers] == [server]


def test_document_is_public_json(api_public: CheckedClient):
    """No token needed; JSON; HEAD like GET."""
    response = api_public.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert api_public.open("/openapi.json", "HEAD").get_data() == b""


@pytest.mark.parametrize("path", sorted(OPERATIONS))
def test_operations(api_document: dict[str, Any], path: str):
    """Each endpoint: only GET, its 200 body, every status it answers, its security."""
    operation_id, body, statuses = OPERATIONS[path]
    assert set(api_document["paths"][path]) == {"get"}
    operation = api_document["paths"][path]["get"]
    assert operation["operationId"] == operation_id
    assert set(operation["responses"]) == statuses
    for status, response in operation["responses"].items():
        if status == "304":
            assert "content" not in resolve(api_document, response)
            continue
        content = resolve(api_document, response)["content"]
        if (path, status) in {("/registry/origins", "200"), ("/registry/changes", "200")}:
            # The export representations (docs/export.md; docs/api.md, Changes between generations),
            # chosen with Accept.
            assert set(content) == {"application/json", "application/x-ndjson", "text/csv"}
            ndjson = content["application/x-ndjson"]["schema"]
            line = "Origin" if path == "/registry/origins" else "Change"
            assert ndjson["$ref"] == f"#/components/schemas/{line}"
        else:
            assert set(content) == {"application/json"}, status
    if body is not None:
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{body}"}
    if "401" in statuses:
        assert operation["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    else:
        assert "security" not in operation


def test_every_path_is_documented(api_document: dict[str, Any]):
    """Every endpoint of docs/api.md, Endpoints but /docs and /metrics: the summaries, the
    listing, the lookups, the changes, the generations, the history, the document itself and the
    two probes, nothing more."""
    assert set(api_document["paths"]) == set(OPERATIONS)


def test_security_schemes(api_document: dict[str, Any]):
    """Bearer header first, then the access_token cookie (docs/authentication.md)."""
    assert api_document["components"]["securitySchemes"] == {
        "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "access_token"},
    }


@pytest.mark.parametrize("name", sorted(SPEC_TABLES))
def test_component_matches_spec_table(api_document: dict[str, Any], name: str):
    """Every field of the table in docs/api.md with its type and null rule, and nothing else."""
    schema = api_document["components"]["schemas"][name]
    table = SPEC_TABLES[name]
    assert {field: kind(prop) for field, prop in schema["properties"].items()} == {
        field: field_type for field, (field_type, _) in table.items()
    }
    assert set(schema.get("required", [])) == {field for field, (_, req) in table.items() if req}
    assert schema["additionalProperties"] is (name == "Forbidden")


# Bodies (docs/api.md, Changes between generations): each component's fields, every one required.
CHANGE_TABLES = {
    "ChangeList": {"success", "generated_at", "generation", "previous", "since", "counts",
                   "filters_applied", "page", "changes"},
    "Change": {"id", "kind", "blocks", "before", "after"},
    "ChangeCounts": {"added", "removed", "changed"},
    "GenerationList": {"success", "generated_at", "current", "oldest_since", "generations"},
    "Generation": {"generation", "previous", "committed_at", "canonical_origins", "counts",
                   "readable", "digest"},
}  # fmt: skip


# Error bodies for since=m (docs/api.md, Changes since any generation) (404 and 410), each field
# required; and the bodies /registry/changes may answer 404 or 410 with (generation=n's, or
# since=m's).
SINCE_ERROR_TABLES = {
    "SinceNotFound": {"success", "error", "details"},
    "SinceDetails": {"since", "current"},
    "ChangesGone": {"success", "error", "details"},
    "ChangesGoneDetails": {"since", "oldest_since", "current"},
}
CHANGES_ERRORS = {
    "ChangesNotFound": {"GenerationNotFound", "SinceNotFound"},
    "ChangesGoneOrGenerationGone": {"GenerationGone", "ChangesGone"},
}


# History (docs/api.md, An origin's history): each component's fields, every one required.
HISTORY_TABLES = {
    "OriginHistory": {"success", "generated_at", "generation", "oldest_since", "id", "versions"},
    "OriginVersion": {"from", "until", "origin"},
}


def test_no_undocumented_components(api_document: dict[str, Any]):
    """The components are the records, summaries and error bodies of docs/api.md, and its bodies
    of changes, since's errors and an origin's history, no more."""
    assert set(api_document["components"]["schemas"]) == (
        set(SPEC_TABLES)
        | set(CHANGE_TABLES)
        | {"LookupNotFound"}
        | set(SINCE_ERROR_TABLES)
        | set(CHANGES_ERRORS)
        | set(HISTORY_TABLES)
    )


@pytest.mark.parametrize("name", sorted(SINCE_ERROR_TABLES))
def test_since_errors_name_the_contracts_fields(api_document: dict[str, Any], name: str):
    """404 and 410 bodies (docs/api.md, Changes since any generation): their fields, every one
    required."""
    schema = api_document["components"]["schemas"][name]
    assert set(schema["properties"]) == set(schema["required"]) == SINCE_ERROR_TABLES[name]


def test_changes_answer_404_and_410_for_generation_or_since(api_document: dict[str, Any]):
    """/registry/changes: 404 and 410 are either generation's body or since's."""
    responses = api_document["paths"]["/registry/changes"]["get"]["responses"]
    for status, name in (("404", "ChangesNotFound"), ("410", "ChangesGoneOrGenerationGone")):
        ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{name}"
        choices = api_document["components"]["schemas"][name]["oneOf"]
        assert {c["$ref"].rsplit("/", 1)[1] for c in choices} == CHANGES_ERRORS[name]


@pytest.mark.parametrize("name", sorted(HISTORY_TABLES))
def test_history_components_name_the_contracts_fields(api_document: dict[str, Any], name: str):
    """History (docs/api.md, An origin's history): its fields, every one required but generated_at;
    from and until integers or null, origin an Origin or null, oldest_since an integer."""
    schema = api_document["components"]["schemas"][name]
    assert set(schema["properties"]) == HISTORY_TABLES[name]
    assert set(schema["required"]) == HISTORY_TABLES[name] - {"generated_at"}
    if name == "OriginVersion":
        for field in ("from", "until"):
            assert schema["properties"][field]["type"] == ["integer", "null"]
        assert kind(schema["properties"]["origin"]) == "Origin|null"
    else:
        assert schema["properties"]["oldest_since"]["type"] == "integer"
        assert kind(schema["properties"]["versions"]) == "array of OriginVersion"


@pytest.mark.parametrize("name", sorted(CHANGE_TABLES))
def test_change_components_name_the_contracts_fields(api_document: dict[str, Any], name: str):
    """Bodies (docs/api.md, Changes between generations): its fields, and no others."""
    schema = api_document["components"]["schemas"][name]
    assert set(schema["properties"]) == CHANGE_TABLES[name]
    optional = {"generated_at", "filters_applied"}
    assert set(schema.get("required", [])) == CHANGE_TABLES[name] - optional


def test_block_only_with_kind_changed(api_document: dict[str, Any]):
    """The document says what docs/api.md, Changes between generations says of block: alone, or
    with kind=changed."""
    filters = api_document["paths"]["/registry/changes"]["get"]["parameters"][0]
    assert (filters["name"], filters["style"], filters["explode"]) == ("filters", "form", True)
    schema = filters["schema"]
    assert schema["if"] == {"required": ["block"]}
    assert schema["then"] == {"properties": {"kind": {"const": "changed"}}}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/registry/summary", "GenerationNotFound"),
        ("/registry/origins", "GenerationNotFound"),
        ("/registry/origins/{originId}", "LookupNotFound"),
        ("/registry/addresses/{address}", "LookupNotFound"),
        ("/registry/origins/{originId}/history", "LookupNotFound"),
    ],
)
def test_generation_not_found_is_documented(api_document: dict[str, Any], path: str, body: str):
    """A generation never produced is a 404 (docs/api.md, Generations and conditional requests); a
    lookup's 404 may be either body."""
    response = resolve(api_document, api_document["paths"][path]["get"]["responses"]["404"])
    assert response["content"]["application/json"]["schema"] == {
        "$ref": f"#/components/schemas/{body}"
    }
    assert api_document["components"]["schemas"]["LookupNotFound"] == {
        "oneOf": [
            {"$ref": "#/components/schemas/Error"},
            {"$ref": "#/components/schemas/GenerationNotFound"},
        ]
    }


@pytest.mark.parametrize(("schema", "field", "values"), ENUMS)
def test_enums(api_document: dict[str, Any], schema: str, field: str, values: list[Any]):
    """Closed sets of values are spelt out."""
    assert api_document["components"]["schemas"][schema]["properties"][field]["enum"] == values


@pytest.mark.parametrize(
    ("schema", "field", "value"),
    [
        ("Held", "at", "date-time"),
        ("IntegrationStatus", "generated_at", "date-time"),
        ("RegistrySummary", "generated_at", "date-time"),
        ("OriginEnvelope", "generated_at", "date-time"),
        ("OriginList", "generated_at", "date-time"),
    ],
)
def test_date_times(api_document: dict[str, Any], schema: str, field: str, value: str):
    """Date-times say so."""
    assert api_document["components"]["schemas"][schema]["properties"][field]["format"] == value


def test_bounds(api_document: dict[str, Any]):
    """Counts are never negative; address numbers fit PostgreSQL's integer; limit <= 200."""
    schemas = api_document["components"]["schemas"]
    assert schemas["Governance"]["properties"]["active_edges"]["minimum"] == 0
    for part in ("network", "station", "channel"):
        bounds = schemas["BansAllocation"]["properties"][part]
        assert (bounds["minimum"], bounds["maximum"]) == (0, 2147483647)
    assert schemas["Page"]["properties"]["limit"]["maximum"] == 200
    assert schemas["RegistrySummary"]["properties"]["canonical_origins"]["minimum"] == 0


def test_listing_parameters(api_document: dict[str, Any]):
    """The listing's query parameters, as docs/api.md, Listing origins give them; all optional."""
    parameters = api_document["paths"]["/registry/origins"]["get"]["parameters"]
    found = {}
    for parameter in parameters:
        assert parameter["in"] == "query" and parameter["required"] is False
        schema = parameter["schema"]
        found[parameter["name"]] = (
            schema["type"],
            schema.get("enum"),
            schema.get("minimum"),
            schema.get("maximum"),
            schema.get("default"),
        )
        if schema["type"] == "string" and "enum" not in schema:
            # Empty values and NUL are refused, so the document does not promise them.
            assert schema["minLength"] == 1 and "\\u0000" in schema["pattern"]
    assert found == LISTING_PARAMETERS


def test_comma_lists_are_form_style_not_exploded(api_document: dict[str, Any]):
    """id and facet are one value whose items are comma-separated (OpenAPI form, explode
    false), each item as docs/api.md, Facets and ids allows; facet_size is described only with
    facet."""
    parameters = {
        parameter["name"]: parameter
        for parameter in api_document["paths"]["/registry/origins"]["get"]["parameters"]
    }
    ids = parameters["id"]
    assert (ids["style"], ids["explode"]) == ("form", False)
    assert ids["schema"]["items"] == {"type": "string", "pattern": ORIGIN_ID_FORMAT}
    # More than 100 distinct ids is a 400, but repeats count once (docs/api.md, Facets and ids), so
    # a longer list with repeats is valid: the bound is in the description, not a maxItems.
    assert "maxItems" not in ids["schema"]
    assert "1 to 100 distinct ids" in ids["description"]
    assert "twice counts once" in ids["description"]
    options = parameters["facet_options"]
    assert (options["style"], options["explode"]) == ("form", True)
    schema = options["schema"]
    assert set(schema["properties"]) == {"facet", "facet_size"}
    assert schema["dependentRequired"] == {"facet_size": ["facet"]}
    facet = schema["properties"]["facet"]
    valid, repeated = re.compile(facet["pattern"]), re.compile(facet["not"]["pattern"])
    for text in (",".join(FACET_NAMES), "station_id", "network_id,transport"):
        assert valid.search(text) and not repeated.search(text), text
    for text in ("transport,transport", "network_id,station_id,network_id"):
        assert valid.search(text) and repeated.search(text), text
    for text in ("", "colour", "transport,", ",transport", "Transport"):
        assert not valid.search(text), text
    assert "facet" not in parameters and "facet_size" not in parameters


@pytest.mark.parametrize(
    ("path", "name", "good", "bad"),
    [
        (
            "/registry/origins/{originId}",
            "originId",
            [
                "svc:origin:3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
                "3B2F1E0D-9C8B-4A7F-8E6D-5C4B3A291807",
            ],
            ["svc:origin:", "3b2f1e0d9c8b4a7f8e6d5c4b3a291807", "SVC:ORIGIN:0-0-0-0-0"],
        ),
        (
            "/registry/origins/{originId}/history",
            "originId",
            ["svc:origin:3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"],
            ["svc:origin:", "3b2f1e0d9c8b4a7f8e6d5c4b3a291807"],
        ),
        (
            "/registry/addresses/{address}",
            "address",
            ["9.10.3", "0.0.0", "2147483647.0.1"],
            ["09.10.3", "9.10", "-1.2.3", "1.2.3.4", "\u0669.1.1"],
        ),
    ],
)
def test_path_parameters(
    api_document: dict[str, Any], path: str, name: str, good: list[str], bad: list[str]
):
    """Path parameters are required strings whose pattern is the form the service reads."""
    parameter, generation = api_document["paths"][path]["get"]["parameters"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == (name, "path", True)
    assert (generation["name"], generation["in"], generation["required"]) == (
        "generation",
        "query",
        False,
    )
    pattern = re.compile(parameter["schema"]["pattern"], re.ASCII)
    assert all(pattern.search(value) for value in good)
    assert not any(pattern.search(value) for value in bad)


@pytest.mark.parametrize(
    ("path", "status", "header", "header_type"),
    [
        ("/summary", "405", "Allow", "string"),
        ("/summary", "503", "Retry-After", "integer"),
        ("/registry/summary", "401", "WWW-Authenticate", "string"),
        *(
            (path, status, header, kind)
            for path in ("/summary", "/registry/summary", "/registry/origins/{originId}")
            for status in ("200", "304")
            for header, kind in (
                ("Registry-Generation", "integer"),
                ("ETag", "string"),
                ("Last-Modified", "string"),
                ("Cache-Control", "string"),
            )
        ),
    ],
)
def test_response_headers(
    api_document: dict[str, Any], path: str, status: str, header: str, header_type: str
):
    """Headers the service always sends with a response are documented as required."""
    response = resolve(api_document, api_document["paths"][path]["get"]["responses"][status])
    assert response["headers"][header]["required"] is True
    assert response["headers"][header]["schema"] == {"type": header_type}


@pytest.mark.parametrize("accept", ["application/json", "application/x-ndjson", "text/csv"])
def test_every_listing_representation_sends_its_required_headers(
    api_document: dict[str, Any], client: Any, admin_headers: dict[str, str], accept: str
):
    """The listing's 200 requires only headers that each of its representations sends: the
    JSON page's Link, for one, is not sent with an export (it has no pages)."""
    response = client.get("/registry/origins", headers={**admin_headers, "Accept": accept})
    assert response.status_code == 200
    assert response.get_data()
    assert response.headers["Content-Type"].split(";")[0] == accept
    documented = api_document["paths"]["/registry/origins"]["get"]["responses"]["200"]
    required = [name for name, spec in documented["headers"].items() if spec.get("required")]
    assert required
    assert [name for name in required if name not in response.headers] == []
    assert ("Link" in response.headers) is (accept == "application/json")


def test_links_between_lookups(api_document: dict[str, Any]):
    """The listing and each lookup link to the lookups of the same origin."""
    listing = api_document["paths"]["/registry/origins"]["get"]["responses"]["200"]["links"]
    assert listing["getOrigin"]["parameters"] == {"originId": "$response.body#/origins/0/origin/id"}
    lookup = api_document["paths"]["/registry/origins/{originId}"]["get"]["responses"]["200"]
    assert lookup["links"]["getOriginByAddress"]["parameters"] == {
        "address": "$response.body#/origin/bans/address"
    }


# -- the checker itself: it must refuse what the document refuses -------------------------------

GOOD_ORIGIN = {
    "origin": {
        "id": "svc:origin:3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807",
        "name": "n",
        "registry_id": None,
        "network": {"id": None, "name": None},
    },
    "governance": {"state": "ungoverned", "active_edges": 0},
    "bans": {
        "allocated": False,
        "address": None,
        "network": None,
        "station": None,
        "channel": None,
        "publication_status": None,
        "held": None,
    },
    "presentations": [],
}


def _changed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """An OriginEnvelope with one value at path replaced (or removed, for ...)."""
    body: dict[str, Any] = {"success": True, "origin": copy.deepcopy(GOOD_ORIGIN)}
    node = body
    for part in path[:-1]:
        node = node[part]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return body


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("success",), False),
        (("extra",), 1),
        (("origin", "origin", "registry_id"), ...),
        (("origin", "origin", "id"), "3b2f1e0d-9c8b-4a7f-8e6d-5c4b3a291807"),
        (("origin", "governance", "active_edges"), -1),
        (("origin", "governance", "state"), "maybe"),
        (("origin", "bans", "address"), "09.1.1"),
        (("origin", "bans", "held"), {"at": "yesterday", "reason": None}),
        (("origin", "bans", "station"), 2147483648),
        (("origin", "presentations"), [{"carriage_id": "x", "transport": "sat"}]),
        (("generated_at",), "not a date"),
    ],
)
def test_checker_refuses_bad_bodies(
    api_conformance: OpenApiConformance, path: tuple[str, ...], value: Any
):
    """The validator behind every response check is not vacuous."""
    api_conformance.validate("OriginEnvelope", _changed(("success",), True))
    with pytest.raises(AssertionError):
        api_conformance.validate("OriginEnvelope", _changed(path, value))


def test_exports_total_and_limit_are_documented(api_document: dict[str, Any]):
    """docs/export.md, Capacity: an export's Registry-Total (on the listing's 200, not required,
    since the JSON page has none) and the 503 of an export past the limit, with its message."""
    listing = api_document["paths"]["/registry/origins"]["get"]["responses"]
    total = listing["200"]["headers"]["Registry-Total"]
    assert total["required"] is False and total["schema"]["type"] == "integer"
    unavailable = api_document["components"]["responses"]["ServiceUnavailable"]
    assert "REGISTRY_MAX_EXPORTS" in unavailable["description"]
    body = unavailable["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/ServiceUnavailable"
    assert "Retry-After" in unavailable["headers"]
