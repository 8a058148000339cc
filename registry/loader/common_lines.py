"""The common line, written out per record type: most of a document's lines are records
with every field, breaking no rule, whose values COPY takes as they are. For each record type
a function written here from RECORD_FIELDS turns such a line straight into its COPY text;
any other line takes the general path (registry.loader.document), which finds and reports its
problems.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from registry.database.search_text import fold_for_search
from registry.loader.fields import CHECKED_TEXT, ORIGIN_ID, PLAIN_TEXT, RECORD_FIELDS, FieldError
from registry.loader.records import copy_field

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
        if rule in CHECKED_TEXT:
            names[f"rule{number}"] = rule
            lines += [
                "        if v is None:",
                f"            t{number} = None",
                "        else:",
                f"            t{number} = rule{number}(v)",
                "            quotes += 2",
            ]
            continue
        branches = PLAIN_TEXT[rule]  # a rule of these record types without one: KeyError
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


COMMON_LINE = {kind: _compile_line(kind, RECORD_FIELDS[kind]) for kind in _LINE_TYPES}
