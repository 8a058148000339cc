"""Reading a graph document: JSON Lines, one record per line, checked record by record.

Rules that need the whole document (unique ids, references, the catalog's transports)
are checked by PostgreSQL after the rows are in; see registry.loader.loading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, Any, NamedTuple, Protocol

import orjson

from registry.database.search_text import fold_for_search

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
# The longest line, in bytes with its newline: far above any valid record (about 40 KB with
# every text field at its limit, written as \u escapes), and what one line may cost in memory.
MAX_LINE_BYTES = 1 << 20
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class Problem(NamedTuple):
    """One thing wrong with the document: where, which field, what."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class LineSource(Protocol):
    """What the reader reads lines from: a binary file, or a piece of one."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most size bytes of it (all of it when size is negative)."""


class FieldError(ValueError):
    """A field's value breaks its rule; the message says how."""


# --- field rules: each returns the value to store, or raises FieldError -------------------


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError(f"must be a string, not {_json_type(value)}")
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
        raise FieldError(f"must be true or false, not {_json_type(value)}")
    return value


def _integer_between(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(f"must be an integer, not {_json_type(value)}")
        if not low <= value <= high:
            raise FieldError(f"must be between {low} and {high}, not {value}")
        return value

    return check


def _origin_id(value: Any) -> str:
    value = _at_most(MAX_ID_LENGTH, _string)(value)
    match = ORIGIN_ID.match(value)
    if match is None:
        raise FieldError(f"must be svc:origin:<uuid>, not {_quote(value)}")
    return match.group(1).lower()


def _one_of(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            raise FieldError(f"must be one of {', '.join(allowed)}, not {_quote(value)}")
        return value

    return check


def _date_time(value: Any) -> str:
    value = _string(value)
    if not _RFC3339.match(value):
        raise FieldError(f"must be an RFC 3339 date-time with a time zone, not {_quote(value)}")
    text = value.upper()
    seconds, dot, rest = text.partition(".")
    if dot:  # Python keeps microseconds: drop digits past the sixth
        digits = re.match(r"\d+", rest)
        assert digits is not None
        text = f"{seconds}.{digits.group(0)[:6]}{rest[digits.end() :]}"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: outside years 1-9999 once in UTC
        raise FieldError(f"is not a valid date-time: {_quote(value)}") from None
    return moment.isoformat()


def _transports(value: Any) -> str:
    if not isinstance(value, list):
        raise FieldError(f"must be an array of transports, not {_json_type(value)}")
    for item in value:
        if item not in TRANSPORTS or not isinstance(item, str):
            raise FieldError(f"must hold only {', '.join(TRANSPORTS)}, not {_quote(item)}")
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

# Conditions under which a rule returns its value unchanged; a value that meets none of them
# is handed to the rule itself, which returns or raises exactly as in the general path.
_STR = 'type(v) is str and "\\x00" not in v'
_PASSES = {
    _id: f"{_STR} and 0 < len(v) <= {MAX_ID_LENGTH}",
    _text: f"{_STR} and len(v) <= {MAX_TEXT_LENGTH}",
    _optional_text: f"v is None or ({_STR} and len(v) <= {MAX_TEXT_LENGTH})",
    _optional_id: f"v is None or ({_STR} and len(v) <= {MAX_ID_LENGTH})",
    _optional_nonempty_id: f"v is None or ({_STR} and 0 < len(v) <= {MAX_ID_LENGTH})",
    _boolean: "v is True or v is False",
    _int32: f"type(v) is int and 0 <= v <= {INT32_MAX}",
}


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
        passes = _PASSES.get(rule)
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


def _json_type(value: Any) -> str:
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


def _quote(value: Any) -> str:
    text = orjson.dumps(value).decode() if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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


# --- the common line, written out per record type -----------------------------------------

# A text value COPY takes as it is: no character it escapes (backslash, tab, newline,
# carriage return) and no NUL, which isprintable rules out with every other control
# character. A rarer value (a name with a no-break space, say) takes the general path.
_PLAIN = "v.isprintable() and BACKSLASH not in v"
# For each rule: the condition under which a value passes it unchanged as a plain text, or
# the COPY text of another value it accepts; (condition, text) pairs tried in order.
_PLAIN_TEXT: dict[Callable[[Any], Any], tuple[tuple[str, str], ...]] = {
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
_CHECKED_TEXT = frozenset(
    (
        RECORD_FIELDS["allocation"][4][1],  # publication_status
        RECORD_FIELDS["allocation"][5][1],  # held_at
        RECORD_FIELDS["carriage"][1][1],  # transport
    )
)
# The rules check_record applies across fields, as conditions that reject a line (on the raw
# values v<n> of the record's fields), and the extra columns of a type (on the texts t<n>).
_CROSS_FIELD = {
    "allocation": '(v4 == "held") != (v5 is not None)',
    "carriage": "v5 is not None and v1 is None",
}
_EXTRA_COLUMNS = {"origin": ("fold(t1)", "None if v3 is None else fold(t3)")}
# The single records (catalog, feed) are rare and keep the general path.
_LINE_TYPES = ("network", "origin", "governance_edge", "allocation", "carriage")


def _compile_line(
    kind: str, fields: tuple[tuple[str, Callable[[Any], Any], bool], ...]
) -> Callable[[bytes, dict[str, Any]], str | None]:
    """The COPY text of a line whose record of this type has every field, breaks no rule,
    repeats no key and holds only values COPY takes as they are; None for any other line.

    Such a line's text is exactly what read_line's general path writes (before the source
    line): the repeated-key check, check_record and copy_field in one straight-line function.
    A None sends the line down that general path, which finds and reports its problems.
    """
    names: dict[str, Any] = {
        "ORIGIN_ID": ORIGIN_ID,
        "FieldError": FieldError,
        "BACKSLASH": "\\",
        "TAB": "\t",
        "NULL": copy_field(None),
    }
    # Every key of the line and the type's own value are one pair of quotes each.
    lines = [
        "def line(raw, record):",
        f"    if len(record) != {len(fields) + 1}:",
        "        return None",
        f"    quotes = {2 * (len(fields) + 1) + 2}",
        "    try:",
    ]
    for number, (name, rule, _required) in enumerate(fields):
        lines.append(f"        v{number} = v = record[{name!r}]")
        if rule in _CHECKED_TEXT:
            names[f"rule{number}"] = rule
            lines += [
                "        if v is None:",
                f"            t{number} = None",
                "        else:",
                f"            t{number} = rule{number}(v)",
                "            quotes += 2",
            ]
            continue
        branches = _PLAIN_TEXT[rule]  # a rule of these record types without one: KeyError
        for index, (condition, text) in enumerate(branches):
            lines.append(f"        {'if' if index == 0 else 'elif'} {condition}:")
            lines.append(f"            t{number} = {text}")
            if text in ("v", "m[1].lower()"):
                lines.append("            quotes += 2")
        lines += ["        else:", "            return None"]
    lines += ["    except (KeyError, FieldError):", "        return None"]
    if kind in _CROSS_FIELD:
        lines += [f"    if {_CROSS_FIELD[kind]}:", "        return None"]
    columns = [f"t{number}" for number in range(len(fields))]
    for index, extra in enumerate(_EXTRA_COLUMNS.get(kind, ())):
        names["fold"] = fold_for_search
        lines += [
            f"    x{index} = {extra}",
            f"    if x{index} is not None and not (x{index}.isprintable()"
            f" and BACKSLASH not in x{index}):",
            "        return None",
        ]
        columns.append(f"x{index}")
    lines += [
        "    if raw.count(b'\"') != quotes:",  # a repeated key, an escaped quote: general path
        "        return None",
        "    return TAB.join(["
        + ", ".join(f"NULL if {c} is None else {c}" for c in columns)
        + "])",
    ]
    exec("\n".join(lines), names)  # code written here from RECORD_FIELDS
    line: Callable[[bytes, dict[str, Any]], str | None] = names["line"]
    line.__name__ = f"line_{kind}"
    return line


_COMMON_LINE = {kind: _compile_line(kind, RECORD_FIELDS[kind]) for kind in _LINE_TYPES}


def check_record(line: int, record: Any) -> tuple[str, list[Any]] | list[Problem]:
    """Check one parsed record: (type, column values) when it is good, else its problems."""
    if not isinstance(record, dict):
        return [Problem(line, "record", f"must be a JSON object, not {_json_type(record)}")]
    kind = record.get("type")
    if kind is None:
        return [Problem(line, "type", "is required")]
    fields = RECORD_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        known = ", ".join(RECORD_FIELDS)
        return [Problem(line, "type", f"unknown record type {_quote(kind)} (known: {known})")]
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


class DocumentReader:
    """Streams a document into one spool per table, collecting problems as it goes."""

    def __init__(self, spools: dict[str, IO[str]], max_problems: int = 20):
        self.spools = spools
        self.max_problems = max_problems
        self.problems: list[Problem] = []
        self.problem_count = 0
        self.counts: dict[str, int] = dict.fromkeys(RECORD_FIELDS, 0)
        self.lines = 0
        # The line of the first catalog and feed record read (a second one is a problem).
        self.single_records: dict[str, int] = {}

    def add_problems(self, problems: Iterable[Problem]) -> None:
        """Keep the first few problems and count them all."""
        for problem in problems:
            self.problem_count += 1
            if len(self.problems) < self.max_problems:
                self.problems.append(problem)

    def read_line(self, line: int, raw: bytes) -> None:
        """Parse, check and spool one line of the document."""
        self.lines = line
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as error:  # a blank line is not JSON either
            if not raw.strip():
                message = "empty line; every line must hold a record"
            else:
                message = f"invalid JSON: {error.msg}"
            self.add_problems([Problem(line, "record", message)])
            return
        if type(record) is dict and type(kind := record.get("type")) is str:
            common = _COMMON_LINE.get(kind)
            text = None if common is None else common(raw, record)
            if text is not None:
                self.counts[kind] += 1
                self.spools[kind].write(f"{text}\t{line}\n")
                return
        repeated = _repeated_key(raw, record)
        if repeated is not None:
            self.add_problems([Problem(line, repeated, "given more than once in the record")])
            return
        checked = check_record(line, record)
        if isinstance(checked, list):
            self.add_problems(checked)
            return
        kind, values = checked
        if kind in SINGLE_RECORD_TYPES:
            first = self.single_records.setdefault(kind, line)
            if first != line:
                self.add_problems([second_record(line, kind, first)])
                return
        self.counts[kind] += 1
        values.append(line)
        self.spools[kind].write("\t".join(map(copy_field, values)) + "\n")

    def read(
        self,
        stream: LineSource,
        progress: Callable[[int], None] | None = None,
        first_line: int = 1,
    ) -> None:
        """Read a whole binary stream, calling progress(lines) every 10,000 lines.

        first_line is the number of the stream's first line: a piece of a document read on
        its own (registry.loader.parsing) keeps the document's line numbers.
        """
        number = first_line - 1
        # readline with a limit: a line never costs more memory than MAX_LINE_BYTES.
        while raw := stream.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                self.lines = number
                self.add_problems(
                    [Problem(number, "record", f"line too long: over {MAX_LINE_BYTES} bytes")]
                )
                while not raw.endswith(b"\n") and (raw := stream.readline(1 << 16)):
                    pass
            else:
                self.read_line(number, raw)
            if progress is not None and number % 10_000 == 0:
                progress(number)


def _repeated_key(raw: bytes, record: Any) -> str | None:
    """A key given twice in the line's top-level object (orjson keeps the last silently).

    Quick path: every key and every string value of the line is one pair of quotes, and a
    repeated key adds a pair the parsed record does not account for. So when the line holds
    exactly as many quotes as the record's keys and strings need, no key was repeated. Any
    other line (repeated keys, escaped quotes, nested objects) is parsed again by the
    standard library, which sees every key.
    """
    if not isinstance(record, dict):
        return None
    strings = len(record)
    for value in record.values():
        if type(value) is str:
            strings += 1
        elif type(value) is list and all(type(item) is str for item in value):
            strings += len(value)
        elif type(value) is list or type(value) is dict:
            strings = -1
            break
    if raw.count(b'"') == 2 * strings:
        return None
    try:
        pairs: list[tuple[str, Any]] = json.loads(raw, object_pairs_hook=lambda pairs: pairs)
    except ValueError:  # orjson took it; nothing more to learn here
        return None
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            return name
        seen.add(name)
    return None
