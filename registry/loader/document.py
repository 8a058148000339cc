"""Reading a graph document: JSON Lines, one record per line, checked record by record.

Each line takes the common path written out for its record type when it can
(registry.loader.common_lines), else the general one: the repeated-key check, then
check_record (registry.loader.records). Rules that need the whole document (unique ids,
references, the catalog's transports) are checked by PostgreSQL after the rows are in; see
registry.loader.loading.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import IO, Any, Protocol

import orjson

from registry.loader.common_lines import COMMON_LINE
from registry.loader.fields import RECORD_FIELDS
from registry.loader.records import (
    SINGLE_RECORD_TYPES,
    Problem,
    check_record,
    copy_field,
    second_record,
)

# The longest line, in bytes with its newline: far above any valid record (about 40 KB with
# every text field at its limit, written as \u escapes), and what one line may cost in memory.
MAX_LINE_BYTES = 1 << 20


class LineSource(Protocol):
    """What the reader reads lines from: a binary file, or a piece of one."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most size bytes of it (all of it when size is negative)."""


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
            common = COMMON_LINE.get(kind)
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
