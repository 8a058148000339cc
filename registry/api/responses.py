"""JSON responses, encoded with orjson, and the options every route is registered with."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Response
from flask.json.provider import JSONProvider

# Every route is GET (HEAD follows). OPTIONS is not answered automatically, so it gets the
# JSON 405 with Allow like any other method; and slashes are not merged, because werkzeug
# would answer `/registry//origins` with an HTML redirect that no error handler sees.
GET_ROUTE: dict[str, Any] = {"provide_automatic_options": False, "merge_slashes": False}


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
