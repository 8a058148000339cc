"""Query parameters, parsed strictly (docs/api.md, Listing origins and Errors): GET
/registry/origins takes filters and a page; every other endpoint takes none."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validates_schema

from schemas.origin import INT32_MAX, TRANSPORTS

# ASCII digits only: `re`'s \d and str.isdigit() would also take other scripts' digits.
_DIGITS = re.compile(r"[0-9]+\Z")
# What the OpenAPI document promises a free-text value looks like: not empty, no NUL.
_TEXT_PATTERN = "^[^\\u0000]+$"
# The longest free-text value (docs/api.md, Listing origins), in characters. It also bounds the Link
# header: a character is at most 12 bytes percent-encoded, so a listing's four links stay well
# inside the response-header buffer nginx gives the app (deploy/nginx.conf, docs/api.md).
MAX_TEXT_LENGTH = 256

# The path parameters' forms, for the views (with re.fullmatch) and the OpenAPI document.
# A value of another form is a 404 like an unknown one (docs/api.md, Errors), not a 400.
_HEX = "[0-9a-fA-F]"
ORIGIN_ID_FORMAT = (
    rf"^(svc:origin:)?({_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}})$"
)
# Plain decimal: no sign, no leading zeros, ASCII digits; at most ten digits, so that int()
# never sees a huge string (anything past 2147483647 is held by no origin anyway).
_ORIGIN_ID = re.compile(ORIGIN_ID_FORMAT)
ORIGIN_PREFIX = "svc:origin:"
# docs/api.md, Facets and ids: at most this many distinct ids in one `id`. 100 prefixed ids take
# about 5.4 KB of a request line even with every colon and comma percent-encoded, well within the 16
# KB that gunicorn and nginx accept (gunicorn.conf.py, deploy/nginx.conf; docs/api.md).
MAX_IDS = 100
# The facets a listing may ask for, in the order they are documented (docs/api.md, Facets and ids).
FACET_NAMES = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
    "network_id",
    "station_id",
)
FACET_SIZE_DEFAULT = 10
FACET_SIZE_MAX = 100
ADDRESS_FORMAT = r"^(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})$"


class QueryParameter(fields.Field):
    """One query parameter: given once, not empty, no NUL; its value checked by parse()."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        """The parsed value of the list of values given under this name."""
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
    """One of a fixed set of words, spelt exactly so."""

    def __init__(self, choices: tuple[str, ...], description: str, **kwargs: Any):
        """A parameter whose value must be one of choices."""
        metadata = {"type": "string", "enum": list(choices), "description": description}
        super().__init__(metadata=metadata, **kwargs)
        self.choices = choices

    def parse(self, text: str) -> str:
        """The word itself, when allowed."""
        if text not in self.choices:
            raise ValidationError(f"must be one of: {', '.join(self.choices)}")
        return text


class Flag(QueryParameter):
    """true or false, spelt exactly so."""

    def __init__(self, description: str, **kwargs: Any):
        """A boolean parameter."""
        super().__init__(metadata={"type": "boolean", "description": description}, **kwargs)

    def parse(self, text: str) -> bool:
        """True or False."""
        if text == "true":
            return True
        if text == "false":
            return False
        raise ValidationError("must be true or false")


class DecimalInteger(QueryParameter):
    """A whole number in plain ASCII decimal, within bounds."""

    def __init__(self, minimum: int, maximum: int, description: str, **kwargs: Any):
        """An integer parameter between minimum and maximum, both included."""
        metadata = {
            "type": "integer",
            "minimum": minimum,
            "maximum": maximum,
            "description": description,
            **kwargs.pop("metadata", {}),
        }
        super().__init__(metadata=metadata, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def parse(self, text: str) -> int:
        """The integer, when the text is digits only and in range."""
        if not _DIGITS.match(text):
            raise ValidationError("must be a whole number written with the digits 0-9")
        significant = text.lstrip("0") or "0"
        # Length first: int() of a huge string is slow, and the answer is already known.
        number = (
            int(significant) if len(significant) <= len(str(self.maximum)) else self.maximum + 1
        )
        if not self.minimum <= number <= self.maximum:
            raise ValidationError(f"must be between {self.minimum} and {self.maximum}")
        return number


class Text(QueryParameter):
    """Free text, taken literally."""

    def __init__(self, description: str, **kwargs: Any):
        """A free-text parameter."""
        metadata = {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TEXT_LENGTH,
            "pattern": _TEXT_PATTERN,
            "description": description,
        }
        super().__init__(metadata=metadata, **kwargs)

    def parse(self, text: str) -> str:
        """The text itself, when not too long."""
        if len(text) > MAX_TEXT_LENGTH:
            raise ValidationError(f"must be at most {MAX_TEXT_LENGTH} characters")
        return text


class CommaList(QueryParameter):
    """A comma-separated list (OpenAPI form style, explode false) of distinct items."""

    def __init__(
        self,
        item: dict[str, Any],
        max_items: int,
        description: str,
        repeats_count_once: bool = False,
        **kwargs: Any,
    ):
        """A list of at most max_items distinct items, each as the item schema says.

        repeats_count_once: a repeated item is taken once, so a longer list with repeats is
        accepted; the document then states no maxItems (it counts repeats), and the
        description gives the bound.
        """
        metadata: dict[str, Any] = {
            "type": "array",
            "items": item,
            "minItems": 1,
            "description": description,
        }
        if not repeats_count_once:
            metadata["maxItems"] = max_items
        super().__init__(metadata=metadata, **kwargs)
        self.max_items = max_items

    def parse(self, text: str) -> list[Any]:
        """The items in the order given, each once (parse_item says when two are the same)."""
        # A dict keeps the order given and finds a repeat in one step (100 ids: no 5,000
        # comparisons of a list's members).
        items: dict[Any, None] = {}
        for part in text.split(","):
            if part == "":
                raise ValidationError("must be a comma-separated list with no empty item")
            items[self.parse_item(part)] = None
        if len(items) > self.max_items:
            raise ValidationError(f"must list at most {self.max_items} distinct items")
        return list(items)

    def parse_item(self, part: str) -> Any:
        """One item of the list, parsed."""
        return part


class FacetNames(CommaList):
    """`facet`: names among FACET_NAMES, each at most once (docs/api.md, Facets and ids)."""

    def __init__(self, **kwargs: Any):
        """The facet parameter."""
        super().__init__(
            {"type": "string", "enum": list(FACET_NAMES)},
            len(FACET_NAMES),
            "count the matching origins (all pages) per value of each named field, in the "
            "answer's `facets`; comma-separated, each name once",
            **kwargs,
        )

    def parse(self, text: str) -> list[Any]:
        """The names in the order given; unknown or repeated names are refused."""
        names = text.split(",")
        for name in names:
            if name == "":
                raise ValidationError("must be a comma-separated list with no empty name")
            if name not in FACET_NAMES:
                raise ValidationError(
                    f"unknown facet {name[:40]!r}: one of {', '.join(FACET_NAMES)}"
                )
        if len(set(names)) != len(names):
            raise ValidationError("names a facet more than once; name each once")
        return names


class OriginIds(CommaList):
    """`id`: 1 to MAX_IDS origin ids, prefixed or bare uuids, as svc:origin:<uuid>."""

    def __init__(self, **kwargs: Any):
        """The id parameter."""
        super().__init__(
            {"type": "string", "pattern": ORIGIN_ID_FORMAT},
            MAX_IDS,
            f"only these origins (1 to {MAX_IDS} distinct ids, each svc:origin:<uuid> or the "
            "bare uuid; comma-separated; an id given twice counts once; ids matching no origin "
            "are simply absent)",
            repeats_count_once=True,
            **kwargs,
        )

    def parse_item(self, part: str) -> str:
        """svc:origin:<uuid> in lower case, the form records carry."""
        match = _ORIGIN_ID.fullmatch(part)
        if match is None:
            shown = part if len(part) <= 60 else part[:57] + "..."
            raise ValidationError(f"{shown!r} is not an origin id (svc:origin:<uuid> or a uuid)")
        return ORIGIN_PREFIX + match.group(2).lower()


class StrictQuerySchema(Schema):
    """A query schema that refuses names it does not declare."""

    error_messages = {"unknown": "unknown parameter"}

    class Meta:
        unknown = RAISE


class NoQuerySchema(StrictQuerySchema):
    """Endpoints that take no query parameters: any parameter is unknown."""


# A generation is a PostgreSQL bigint (docs/api.md, Generations and conditional requests).
GENERATION_MAX = 2**63 - 1


def generation_parameter() -> DecimalInteger:
    """The optional `generation` of every /registry GET: answer from that generation."""
    return DecimalInteger(
        1,
        GENERATION_MAX,
        "answer from this generation (Registry-Generation of an earlier answer) while it is "
        "kept: 410 once it was dropped, 404 if it was never produced; default the newest",
    )


class PinnedQuerySchema(StrictQuerySchema):
    """/registry endpoints other than the listing: only the optional generation."""

    generation = generation_parameter()


class OriginListQuerySchema(StrictQuerySchema):
    """GET /registry/origins: filters (combined with AND) and the page wanted."""

    governance_state = Choice(("governed", "ungoverned"), "by active governance edge")
    allocation_state = Choice(("allocated", "unallocated"), "whether an address allocation exists")
    publication_status = Choice(("published", "held"), "allocation publication state")
    transport = Choice(TRANSPORTS, "origins with a resolved presentation on that transport")
    has_presentations = Flag("whether any carriage resolves to the origin")
    network_id = Text("origins under this network (exact network id)")
    station_id = DecimalInteger(0, INT32_MAX, "origins whose allocation has this station number")
    search = Text("case-insensitive substring of the origin name or registry id, taken literally")
    id = OriginIds()
    facet = FacetNames()
    facet_size = DecimalInteger(
        1,
        FACET_SIZE_MAX,
        "at most this many values of the network_id and station_id facets (needs facet)",
        metadata={"default": FACET_SIZE_DEFAULT},
    )
    page = DecimalInteger(
        1, INT32_MAX, "1-based page number", load_default=1, metadata={"default": 1}
    )
    limit = DecimalInteger(1, 200, "origins per page", load_default=50, metadata={"default": 50})
    generation = generation_parameter()

    @validates_schema
    def _facet_size_needs_facet(self, data: dict[str, Any], **kwargs: Any) -> None:
        """facet_size alone says nothing: a 400 naming it (docs/api.md, Facets and ids)."""
        if "facet_size" in data and "facet" not in data:
            raise ValidationError("is only taken with facet", "facet_size")


FILTER_NAMES = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
    "network_id",
    "station_id",
    "search",
    "id",
)
# Parameters of the JSON listing that shape the answer without filtering it: kept in every
# Link URL, never in filters_applied, a 400 with an export (docs/api.md, Facets and ids).
FACET_PARAMETERS = ("facet", "facet_size")

NO_QUERY = NoQuerySchema()
PINNED_QUERY = PinnedQuerySchema()
ORIGIN_LIST_QUERY = OriginListQuerySchema()


def parse_origin_list_query(args: Mapping[str, list[str]]) -> dict[str, Any]:
    """Filters, page, limit and generation (when given) from name -> values given.

    ValidationError names each bad one.
    """
    return ORIGIN_LIST_QUERY.load(dict(args))


def parse_pinned_query(args: Mapping[str, list[str]]) -> int | None:
    """The generation asked for, or None; ValidationError names any other parameter."""
    if not args:  # the common case: nothing given, nothing to check
        return None
    parsed: dict[str, Any] = PINNED_QUERY.load(dict(args))
    return parsed.get("generation")


def refuse_any_query(args: Mapping[str, list[str]]) -> None:
    """Raise ValidationError naming each parameter given to an endpoint that takes none."""
    if args:  # nothing given, nothing to refuse: the common case skips the schema
        NO_QUERY.load(dict(args))
