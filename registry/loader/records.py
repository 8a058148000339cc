"""One record of a graph document, checked on its own: its type's fields, the rules across
them, and the row it becomes in its table.

The field rules are in registry.loader.fields; rules that need the whole document (unique
ids, references, the catalog's transports) are checked by PostgreSQL after the rows are in
(registry.loader.loading), and a second catalog or feed record by the reader
(registry.loader.document).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from registry.database.search_text import fold_for_search
from registry.loader.fields import (
    PASSES,
    RECORD_FIELDS,
    FieldError,
    json_type,
    quote,
)

_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class Problem(NamedTuple):
    """One thing wrong with the document: where, which field, what."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


# Where each record type goes, and the columns COPY fills (checked fields, extras, line).
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "network": ("networks", ("id", "name", "source_line")),
    "origin": (
        "origins",
        (
            "id",
            "name",
            "network_id",
            "registry_id",
            "reviewed",
            "name_key",
            "registry_key",
            "source_line",
        ),
    ),
    "governance_edge": ("governance_edges", ("origin_id", "governor_id", "active", "source_line")),
    "allocation": (
        "allocations",
        (
            "origin_id",
            "network",
            "station",
            "channel",
            "publication_status",
            "held_at",
            "held_reason",
            "source_line",
        ),
    ),
    "carriage": (
        "carriages",
        ("id", "transport", "provider", "source", "availability", "origin_id", "source_line"),
    ),
    "catalog": ("catalog", ("transports", "source_line")),
    "feed": (
        "feed",
        (
            "connected",
            "networks",
            "iptv_networks",
            "ovp_networks",
            "channels",
            "programs",
            "reviews",
            "pending_reviews",
            "source_line",
        ),
    ),
}
SINGLE_RECORD_TYPES = ("catalog", "feed")
_ALLOWED_FIELDS = {
    kind: frozenset(("type", *(name for name, _, _ in fields)))
    for kind, fields in RECORD_FIELDS.items()
}


# --- the common case, written out per record type ------------------------------------------


def _compile_fields(
    kind: str, fields: tuple[tuple[str, Callable[[Any], Any], bool], ...]
) -> Callable[[dict[str, Any]], list[Any] | None]:
    """The checked values of a record of this type that has every field and breaks no rule,
    as check_record's general path gives them; None for any other record (which then takes
    the general path, so its problems are reported exactly as before).

    Most of a document's lines are such records; this skips the general path's per-field
    bookkeeping and, where a value has the plain shape its rule accepts unchanged, the call.
    """
    names: dict[str, Any] = {"FieldError": FieldError}
    lines = [
        "def check(record):",
        f"    if len(record) != {len(fields) + 1}:",  # every field and `type`, nothing else
        "        return None",
        "    try:",
    ]
    for number, (name, rule, _required) in enumerate(fields):
        names[f"rule{number}"] = rule
        lines.append(f"        v = record[{name!r}]")
        passes = PASSES.get(rule)
        if passes is None:
            lines.append(f"        a{number} = rule{number}(v)")
        else:
            lines.append(f"        a{number} = v if {passes} else rule{number}(v)")
    lines += [
        "    except (KeyError, FieldError):",
        "        return None",
        "    return [" + ", ".join(f"a{number}" for number in range(len(fields))) + "]",
    ]
    exec("\n".join(lines), names)  # code written here from RECORD_FIELDS
    check: Callable[[dict[str, Any]], list[Any] | None] = names["check"]
    check.__name__ = f"check_{kind}"
    return check


_COMMON_CASE = {kind: _compile_fields(kind, fields) for kind, fields in RECORD_FIELDS.items()}


def copy_field(value: Any) -> str:
    """One value in COPY's text format."""
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, str):
        # translate looks every character up in a dict: only the rare string that needs
        # an escape pays for it (four scans for the others cost a tenth as much).
        if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
            return value.translate(_COPY_ESCAPES)
        return value
    return str(value)


def check_record(line: int, record: Any) -> tuple[str, list[Any]] | list[Problem]:
    """Check one parsed record: (type, column values) when it is good, else its problems."""
    if not isinstance(record, dict):
        return [Problem(line, "record", f"must be a JSON object, not {json_type(record)}")]
    kind = record.get("type")
    if kind is None:
        return [Problem(line, "type", "is required")]
    fields = RECORD_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        known = ", ".join(RECORD_FIELDS)
        return [Problem(line, "type", f"unknown record type {quote(kind)} (known: {known})")]
    problems: list[Problem] = []
    values = _COMMON_CASE[kind](record)
    if values is None:
        values = []
        for name, rule, required in fields:
            if name not in record:
                if required:
                    problems.append(Problem(line, name, "is required"))
                values.append(None)
                continue
            try:
                values.append(rule(record[name]))
            except FieldError as error:
                problems.append(Problem(line, name, str(error)))
                values.append(None)
        allowed = _ALLOWED_FIELDS[kind]
        for name in record:
            if name not in allowed:
                problems.append(Problem(line, name, f"unknown field for a {kind} record"))
        if problems:
            return problems
    if kind == "allocation":
        problems = _check_allocation(line, values)
    elif kind == "carriage" and values[5] is not None and values[1] is None:
        problems = [Problem(line, "transport", "must be given for a carriage that names an origin")]
    elif kind == "origin":
        values.append(fold_for_search(values[1]))
        values.append(None if values[3] is None else fold_for_search(values[3]))
    return problems or (kind, values)


def _check_allocation(line: int, values: list[Any]) -> list[Problem]:
    """held_at follows publication_status; a reason without a hold is kept but never shown."""
    status, held_at = values[4], values[5]
    if status == "held" and held_at is None:
        return [Problem(line, "held_at", "is required when publication_status is held")]
    if status != "held" and held_at is not None:
        return [Problem(line, "held_at", "must be null unless publication_status is held")]
    return []


def second_record(line: int, kind: str, first: int) -> Problem:
    """The problem of a catalog or feed record after the first one (on line first)."""
    return Problem(line, "type", f"a second {kind} record (the first is on line {first})")
