"""The rules a graph document's fields follow: each returns the value to store, or raises.

RECORD_FIELDS says which rule each field of each record type follows; registry.loader.records
applies them. Beside each rule, the plain values it passes unchanged, written as conditions
for the common paths compiled per record type (registry.loader.records and
registry.loader.common_lines), which must accept exactly what the rules accept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

TRANSPORTS = ("iptv", "ovp", "ota", "fast")
PUBLICATION_STATUSES = ("published", "held")
INT32_MAX = 2_147_483_647
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
ORIGIN_ID = re.compile(rf"svc:origin:({_UUID})\Z")
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})\Z")
# Limits (docs/loading.md), in characters: ids are keys of btree indexes, whose rows must stay
# well under PostgreSQL's ~2.7 KB (256 characters are at most 1 KB of UTF-8), and network ids
# must fit the API's network_id filter (256); free text is shown, never indexed by btree.
MAX_ID_LENGTH = 256
MAX_TEXT_LENGTH = 1024


class FieldError(ValueError):
    """A field's value breaks its rule; the message says how."""


# --- field rules: each returns the value to store, or raises FieldError -------------------


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError(f"must be a string, not {json_type(value)}")
    if "\x00" in value:
        raise FieldError("must not contain NUL characters")
    return value


def _nonempty_string(value: Any) -> str:
    value = _string(value)
    if not value:
        raise FieldError("must not be empty")
    return value


def _at_most(limit: int, rule: Callable[[Any], str]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        value = rule(value)
        if len(value) > limit:
            raise FieldError(f"too long: {len(value)} characters, at most {limit}")
        return value

    check.__name__ = f"{rule.__name__}_at_most_{limit}"
    return check


_id = _at_most(MAX_ID_LENGTH, _nonempty_string)
_text = _at_most(MAX_TEXT_LENGTH, _string)


def _optional(rule: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return None if value is None else rule(value)

    check.__name__ = f"optional_{rule.__name__}"
    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise FieldError(f"must be true or false, not {json_type(value)}")
    return value


def _integer_between(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(f"must be an integer, not {json_type(value)}")
        if not low <= value <= high:
            raise FieldError(f"must be between {low} and {high}, not {value}")
        return value

    return check


def _origin_id(value: Any) -> str:
    value = _at_most(MAX_ID_LENGTH, _string)(value)
    match = ORIGIN_ID.match(value)
    if match is None:
        raise FieldError(f"must be svc:origin:<uuid>, not {quote(value)}")
    return match.group(1).lower()


def _one_of(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            raise FieldError(f"must be one of {', '.join(allowed)}, not {quote(value)}")
        return value

    return check


def _date_time(value: Any) -> str:
    value = _string(value)
    if not _RFC3339.match(value):
        raise FieldError(f"must be an RFC 3339 date-time with a time zone, not {quote(value)}")
    text = value.upper()
    seconds, dot, rest = text.partition(".")
    if dot:  # Python keeps microseconds: drop digits past the sixth
        digits = re.match(r"\d+", rest)
        assert digits is not None
        text = f"{seconds}.{digits.group(0)[:6]}{rest[digits.end() :]}"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: outside years 1-9999 once in UTC
        raise FieldError(f"is not a valid date-time: {quote(value)}") from None
    return moment.isoformat()


def _transports(value: Any) -> str:
    if not isinstance(value, list):
        raise FieldError(f"must be an array of transports, not {json_type(value)}")
    for item in value:
        if item not in TRANSPORTS or not isinstance(item, str):
            raise FieldError(f"must hold only {', '.join(TRANSPORTS)}, not {quote(item)}")
    if len(set(value)) != len(value):
        raise FieldError("must not repeat a transport")
    return "{" + ",".join(value) + "}"


_optional_text = _optional(_text)
_optional_id = _optional(_at_most(MAX_ID_LENGTH, _string))
_optional_nonempty_id = _optional(_id)
_int32 = _integer_between(0, INT32_MAX)
_optional_int64 = _optional(_integer_between(INT64_MIN, INT64_MAX))
_optional_origin_id = _optional(_origin_id)
_optional_date_time = _optional(_date_time)

# (field, rule, required). Tables take the checked values in this order, then source_line.
RECORD_FIELDS: dict[str, tuple[tuple[str, Callable[[Any], Any], bool], ...]] = {
    "network": (("id", _id, True), ("name", _optional_text, True)),
    "origin": (
        ("id", _origin_id, True),
        ("name", _text, True),
        ("network_id", _optional_nonempty_id, True),
        ("registry_id", _optional_id, True),
        ("reviewed", _boolean, True),
    ),
    "governance_edge": (
        ("origin_id", _origin_id, True),
        ("governor_id", _id, True),
        ("active", _boolean, True),
    ),
    "allocation": (
        ("origin_id", _origin_id, True),
        ("network", _int32, True),
        ("station", _int32, True),
        ("channel", _int32, True),
        ("publication_status", _optional(_one_of(*PUBLICATION_STATUSES)), True),
        ("held_at", _optional_date_time, True),
        ("held_reason", _optional_text, False),
    ),
    "carriage": (
        ("id", _id, True),
        ("transport", _optional(_one_of(*TRANSPORTS)), True),
        ("provider", _optional_text, True),
        ("source", _optional_text, True),
        ("availability", _optional_text, True),
        ("origin_id", _optional_origin_id, True),
    ),
    "catalog": (("transports", _transports, True),),
    "feed": (
        ("connected", _boolean, True),
        ("networks", _optional_int64, True),
        ("iptv_networks", _optional_int64, True),
        ("ovp_networks", _optional_int64, True),
        ("channels", _optional_int64, True),
        ("programs", _optional_int64, True),
        ("reviews", _optional_int64, True),
        ("pending_reviews", _optional_int64, True),
    ),
}


def json_type(value: Any) -> str:
    """What JSON calls the value's type, for a problem's message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def quote(value: Any) -> str:
    """The value as JSON, cut to 80 characters, for a problem's message."""
    text = orjson.dumps(value).decode() if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- the plain values each rule passes unchanged -------------------------------------------

# Conditions under which a rule returns its value unchanged; a value that meets none of them
# is handed to the rule itself, which returns or raises exactly as in the general path.
_STR = 'type(v) is str and "\\x00" not in v'
PASSES = {
    _id: f"{_STR} and 0 < len(v) <= {MAX_ID_LENGTH}",
    _text: f"{_STR} and len(v) <= {MAX_TEXT_LENGTH}",
    _optional_text: f"v is None or ({_STR} and len(v) <= {MAX_TEXT_LENGTH})",
    _optional_id: f"v is None or ({_STR} and len(v) <= {MAX_ID_LENGTH})",
    _optional_nonempty_id: f"v is None or ({_STR} and 0 < len(v) <= {MAX_ID_LENGTH})",
    _boolean: "v is True or v is False",
    _int32: f"type(v) is int and 0 <= v <= {INT32_MAX}",
}

# A text value COPY takes as it is: no character it escapes (backslash, tab, newline,
# carriage return) and no NUL, which isprintable rules out with every other control
# character. A rarer value (a name with a no-break space, say) takes the general path.
_PLAIN = "v.isprintable() and BACKSLASH not in v"
# For each rule: the condition under which a value passes it unchanged as a plain text, or
# the COPY text of another value it accepts; (condition, text) pairs tried in order.
PLAIN_TEXT: dict[Callable[[Any], Any], tuple[tuple[str, str], ...]] = {
    _id: ((f"type(v) is str and 0 < len(v) <= {MAX_ID_LENGTH} and {_PLAIN}", "v"),),
    _text: ((f"type(v) is str and len(v) <= {MAX_TEXT_LENGTH} and {_PLAIN}", "v"),),
    _optional_text: (
        ("v is None", "None"),
        (f"type(v) is str and len(v) <= {MAX_TEXT_LENGTH} and {_PLAIN}", "v"),
    ),
    _optional_id: (
        ("v is None", "None"),
        (f"type(v) is str and len(v) <= {MAX_ID_LENGTH} and {_PLAIN}", "v"),
    ),
    _optional_nonempty_id: (
        ("v is None", "None"),
        (f"type(v) is str and 0 < len(v) <= {MAX_ID_LENGTH} and {_PLAIN}", "v"),
    ),
    _boolean: (("v is True", "'t'"), ("v is False", "'f'")),
    _int32: ((f"type(v) is int and 0 <= v <= {INT32_MAX}", "str(v)"),),
    # ORIGIN_ID matches only 47 ASCII characters of uuid and prefix: no escape, no NUL.
    _origin_id: (("type(v) is str and (m := ORIGIN_ID.match(v)) is not None", "m[1].lower()"),),
    _optional_origin_id: (
        ("v is None", "None"),
        ("type(v) is str and (m := ORIGIN_ID.match(v)) is not None", "m[1].lower()"),
    ),
}
# Enumerations and date-times: checked by their rule, whose results are plain texts.
CHECKED_TEXT = frozenset(
    (
        RECORD_FIELDS["allocation"][4][1],  # publication_status
        RECORD_FIELDS["allocation"][5][1],  # held_at
        RECORD_FIELDS["carriage"][1][1],  # transport
    )
)
