"""Helpers of the HTTP surface tests: a test client that checks every response against the
served OpenAPI document, a builder of small graph documents, and a Link header parser."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

JSON = "application/json"
DOCUMENT_URI = "urn:registry:openapi"
ERROR_SCHEMA_BY_STATUS = {400: "InvalidParameters", 401: "Unauthorized", 403: "Forbidden"}


class OpenApiConformance:
    """Checks a response against the OpenAPI document: status, headers, JSON body."""

    def __init__(self, document: dict[str, Any]):
        """Index the document's paths and make its components resolvable."""
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self._registry: Registry = Registry().with_resource(DOCUMENT_URI, resource)
        self._routes = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$"), path)
            for path in document["paths"]
        ]
        self._validators: dict[str, Draft202012Validator] = {}

    def validator(self, component: str) -> Draft202012Validator:
        """A validator for one component schema, $refs resolved within the document."""
        if component not in self._validators:
            self._validators[component] = Draft202012Validator(
                {"$ref": f"{DOCUMENT_URI}#/components/schemas/{component}"},
                registry=self._registry,
                format_checker=FormatChecker(),
            )
        return self._validators[component]

    def validate(self, component: str, body: Any) -> None:
        """Raise AssertionError listing every way body breaks the component schema."""
        errors = sorted(self.validator(component).iter_errors(body), key=str)
        assert not errors, f"body breaks {component}: " + "; ".join(
            f"{list(error.absolute_path)}: {error.message}" for error in errors
        )

    def template(self, path: str) -> str | None:
        """The documented path template a request path falls under, if any."""
        for pattern, template in self._routes:
            if pattern.match(path):
                return template
        return None

    def _resolve(self, item: dict[str, Any]) -> dict[str, Any]:
        """Follow a local $ref (a shared response)."""
        while "$ref" in item:
            node: Any = self.document
            for part in item["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            item = node
        return item

    def documented_response(self, method: str, path: str, status: int) -> dict[str, Any] | None:
        """The documented response for this request and status; None off the documented paths."""
        template = self.template(path)
        if template is None:
            return None
        operations = self.document["paths"][template]
        operation = operations.get("get" if method in ("GET", "HEAD") else method.lower())
        # Methods the document does not list are answered as its 405 says.
        responses = (operation or operations["get"])["responses"]
        assert str(status) in responses, f"{method} {template}: status {status} not documented"
        return self._resolve(responses[str(status)])

    def check(self, method: str, path: str, status: int, headers: Mapping[str, str], data: bytes):
        """Assert that one response is JSON and conforms to the document."""
        assert headers.get("Content-Type") == JSON, (method, path, status, headers)
        assert b"<html" not in data.lower() and b"<!doctype" not in data.lower()
        if method == "HEAD":
            assert data == b"", f"HEAD {path} has a body"
            return
        body = orjson.loads(data)
        documented = self.documented_response(method, path, status)
        if documented is None:
            # Off the documented paths: only an error can come back (401 from the guard first).
            assert status >= 400, (method, path, status)
            self.validate(ERROR_SCHEMA_BY_STATUS.get(status, "Error"), body)
            return
        schema = documented["content"][JSON]["schema"]
        if "$ref" in schema:
            self.validate(schema["$ref"].rsplit("/", 1)[1], body)
        else:
            Draft202012Validator(schema).validate(body)
        for name, header in documented.get("headers", {}).items():
            if header.get("required"):
                assert name in headers, f"{method} {path} {status}: no {name} header"
            if name in headers and header["schema"]["type"] == "integer":
                assert re.fullmatch(r"[0-9]+", headers[name]), f"{name}: {headers[name]!r}"


class CheckedClient:
    """A Flask test client whose every response is checked against the OpenAPI document."""

    def __init__(
        self, client: Any, conformance: OpenApiConformance, headers: Mapping[str, str] | None = None
    ):
        """Wrap client; headers go with every request unless a call gives its own."""
        self.client = client
        self.conformance = conformance
        self.headers = dict(headers or {})

    def open(self, url: str, method: str = "GET", headers: Mapping[str, str] | None = None) -> Any:
        """Send one request (url may carry a raw query string) and check the answer."""
        response = self.client.open(
            url, method=method, headers=self.headers if headers is None else dict(headers)
        )
        path = url.split("?", 1)[0]
        self.conformance.check(
            method, path, response.status_code, response.headers, response.get_data()
        )
        return response

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> Any:
        """GET url, checked."""
        return self.open(url, "GET", headers)

    def json(self, url: str, status: int = 200) -> Any:
        """GET url, expect status, and return the decoded body."""
        response = self.get(url)
        assert response.status_code == status, (url, response.status_code, response.get_data())
        return orjson.loads(response.get_data())


def parse_links(header: str) -> dict[str, tuple[str, dict[str, str]]]:
    """An RFC 8288 Link header as rel -> (path, query parameters)."""
    links: dict[str, tuple[str, dict[str, str]]] = {}
    for match in re.finditer(r'<([^>]*)>\s*;\s*rel="([^"]+)"', header):
        target, rel = match.groups()
        parts = urlsplit(target)
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
        assert len({name for name, _ in query}) == len(query), f"repeated names in {target}"
        assert rel not in links, f"rel {rel} twice"
        links[rel] = (parts.path, dict(query))
    return links


def origin_uuid(key: str) -> str:
    """A stable uuid for a test origin's key."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"test-origin:{key}"))


class GraphBuilder:
    """A graph document assembled record by record, for purpose-built graphs."""

    def __init__(self, catalog: list[str] | None = None, feed: dict[str, Any] | None = None):
        """Start a document, with a catalog record when catalog is given, and a feed record."""
        self.records: list[dict[str, Any]] = []
        if catalog is not None:
            self.records.append({"type": "catalog", "transports": catalog})
        if feed is not None:
            self.records.append({"type": "feed", **feed})

    def network(self, network_id: str, name: str | None = None) -> str:
        """Add a network; returns its id."""
        self.records.append({"type": "network", "id": network_id, "name": name})
        return network_id

    def origin(
        self,
        name: str,
        *,
        uuid_text: str | None = None,
        network_id: str | None = None,
        registry_id: str | None = None,
        reviewed: bool = True,
        edges: tuple[bool, ...] = (),
        address: tuple[int, int, int] | None = None,
        status: str | None = None,
        held_at: str | None = None,
        held_reason: str | None = None,
        carriages: tuple[str, ...] = (),
    ) -> str:
        """Add an origin with its edges (active flags), allocation and carriages; returns its id."""
        origin_id = f"svc:origin:{uuid_text or origin_uuid(name)}"
        self.records.append(
            {
                "type": "origin",
                "id": origin_id,
                "name": name,
                "network_id": network_id,
                "registry_id": registry_id,
                "reviewed": reviewed,
            }
        )
        for number, active in enumerate(edges):
            self.records.append(
                {
                    "type": "governance_edge",
                    "origin_id": origin_id,
                    "governor_id": f"svc:domain:{number}",
                    "active": active,
                }
            )
        if address is not None:
            if status == "held" and held_at is None:
                held_at = "2026-01-02T03:04:05Z"
            network, station, channel = address
            self.records.append(
                {
                    "type": "allocation",
                    "origin_id": origin_id,
                    "network": network,
                    "station": station,
                    "channel": channel,
                    "publication_status": status,
                    "held_at": held_at,
                    "held_reason": held_reason,
                }
            )
        for number, transport in enumerate(carriages):
            self.carriage(f"{transport}-{origin_uuid(name)}-{number}", transport, origin_id)
        return origin_id

    def carriage(
        self,
        carriage_id: str,
        transport: str | None,
        origin_id: str | None = None,
        provider: str | None = None,
        source: str | None = None,
        availability: str | None = None,
    ) -> None:
        """Add one carriage."""
        self.records.append(
            {
                "type": "carriage",
                "id": carriage_id,
                "transport": transport,
                "provider": provider,
                "source": source,
                "availability": availability,
                "origin_id": origin_id,
            }
        )
