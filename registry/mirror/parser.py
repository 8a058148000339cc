"""An export's lines read: each line's origin id, and the sum of the lines' hashes
(docs/mirror.md, "A step" and "Proof").

Per line, an export reads the origin's id, hashes the line and checks that it is UTF-8, then
the store inserts it. The service sends each record in its canonical form (docs/api.md,
"Digests"), so the SHA-256 of the line as sent is its h, and the sum over the export must be
the answer's `Registry-Digest`: that sum proves the lines are the canonical records of the
generation, byte for byte, without writing any record again. Only the id is decoded (msgspec,
into the one field it needs; the rest of the line is checked as JSON and skipped), a sixth of
what a whole parse into Python objects costs. A graph the service rendered before it sorted
keys sends other bytes for the same records; the step then recomputes the digest from the
records themselves (registry/mirror/steps.py).
"""

from __future__ import annotations

import msgspec

from registry.digest import canonical_hash
from registry.mirror.client import Failed


class _Origin(msgspec.Struct):
    """The one field of an Origin record's `origin` block an export needs."""

    id: str


class _Record(msgspec.Struct):
    """An exported line as far as the mirror reads it: `origin.id`."""

    origin: _Origin


_READ_ID = msgspec.json.Decoder(_Record)


def exported(lines: list[bytes], before: int) -> tuple[list[str], int]:
    """The origin id of each exported line and the sum of the lines' hashes, `before` the
    lines of the body ahead of these (for the line number of an error)."""
    utf8(lines, before)
    try:
        ids = [_READ_ID.decode(line).origin.id for line in lines]
    except msgspec.MsgspecError:
        for number, line in enumerate(lines, before + 1):
            try:
                _READ_ID.decode(line)
            except msgspec.ValidationError as error:  # a DecodeError too: asked first
                raise Failed(
                    f"an exported line without origin.id (line {number}): {error}"
                ) from error
            except msgspec.DecodeError as error:
                raise Failed(f"line {number} of the body is not JSON: {error}") from error
        raise
    return ids, sum(map(canonical_hash, lines))


def utf8(lines: list[bytes], before: int) -> None:
    """Raise Failed unless every line is UTF-8 (the id's decoder skips the rest of a line
    unread; the stores take the lines as they came)."""
    text = b"\n".join(lines)
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as error:
        number = before + 1 + text.count(b"\n", 0, error.start)
        raise Failed(f"line {number} of the body is not UTF-8") from None
