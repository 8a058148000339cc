"""The query parameters of GET /registry/origins, parsed strictly (contract §4–§5)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from schemas.origin import TRANSPORTS

INT32_MAX = 2_147_483_647
_DIGITS = re.compile(r"[0-9]+\Z")


class QueryParameter(fields.Field):
    """One query parameter: given once, not empty, no NUL; its value checked by parse()."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        if len(values) != 1:
            raise ValidationError("given more than once; give it once")
        text = values[0]
        if not isinstance(text, str):
            raise ValidationError("must be a string")
        if text == "":
            raise ValidationError("must not be empty")
        if "\x00" in text:
            raise ValidationError("must not contain NUL characters")
        return self.parse(text)

    def parse(self, text: str) -> Any:
        """The parsed value of a present, single, non-empty parameter."""
        return text


class Choice(QueryParameter):
    """One of a fixed set of words."""

    def __init__(self, choices: tuple[str, ...], **kwargs: Any):
        metadata = {"type": "string", "enum": list(choices), **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)
        self.choices = choices

    def parse(self, text: str) -> str:
        """The word itself, when allowed."""
        if text not in self.choices:
            raise ValidationError(f"must be one of: {', '.join(self.choices)}")
        return text


class Flag(QueryParameter):
    """true or false, spelt exactly so."""

    def parse(self, text: str) -> bool:
        """True or False."""
        if text == "true":
            return True
        if text == "false":
            return False
        raise ValidationError("must be true or false")


class DecimalInteger(QueryParameter):
    """A whole number in plain ASCII decimal, within bounds."""

    def __init__(self, minimum: int, maximum: int, **kwargs: Any):
        metadata = {"minimum": minimum, "maximum": maximum, **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def parse(self, text: str) -> int:
        """The integer, when the text is digits only and in range."""
        if not _DIGITS.match(text):
            raise ValidationError("must be a whole number written with the digits 0-9")
        # Length first: int() of a huge string is slow and the answer is already known.
        number = int(text) if len(text) <= 12 else self.maximum + 1
        if not self.minimum <= number <= self.maximum:
            raise ValidationError(f"must be between {self.minimum} and {self.maximum}")
        return number


class Text(QueryParameter):
    """Free text, taken literally."""


class OriginListQuerySchema(Schema):
    """GET /registry/origins: filters (combined with AND) and the page wanted."""

    error_messages = {"unknown": "unknown parameter"}

    class Meta:
        unknown = RAISE

    governance_state = Choice(("governed", "ungoverned"), metadata={"description": "by active governance edge"})
    allocation_state = Choice(
        ("allocated", "unallocated"), metadata={"description": "whether an allocation exists"}
    )
    publication_status = Choice(
        ("published", "held"), metadata={"description": "allocation publication state"}
    )
    transport = Choice(
        TRANSPORTS, metadata={"description": "origins with a resolved presentation on it"}
    )
    has_presentations = Flag(
        metadata={"type": "boolean", "description": "whether any carriage resolves to it"}
    )
    network_id = Text(metadata={"type": "string", "description": "exact network id"})
    station_id = DecimalInteger(
        0, INT32_MAX, metadata={"type": "integer", "description": "the allocation's station"}
    )
    search = Text(
        metadata={
            "type": "string",
            "description": "case-insensitive literal substring of the name or registry id",
        }
    )
    page = DecimalInteger(1, INT32_MAX, load_default=1, metadata={"type": "integer", "default": 1})
    limit = DecimalInteger(1, 200, load_default=50, metadata={"type": "integer", "default": 50})


FILTER_NAMES = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
    "network_id",
    "station_id",
    "search",
)

ORIGIN_LIST_QUERY = OriginListQuerySchema()


def parse_origin_list_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """Parse the query (name -> every value given); raise ValidationError naming each bad one."""
    return ORIGIN_LIST_QUERY.load(dict(args))
