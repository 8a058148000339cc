"""JSON responses, encoded with orjson."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Response
from flask.json.provider import JSONProvider


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response with the right Content-Type."""
    return Response(orjson.dumps(body), status=status, headers=headers, mimetype="application/json")


def now_utc() -> datetime:
    """The current moment, in UTC (for generated_at)."""
    return datetime.now(UTC)


class OrjsonProvider(JSONProvider):
    """Flask's JSON provider on orjson, for anything that still goes through flask.json."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        """Encode obj."""
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        """Decode s."""
        return orjson.loads(s)
