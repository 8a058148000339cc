#!/usr/bin/env python3
"""Keep a mirror of the registry's origins in an NDJSON file (docs/api.md, "Changes since any
generation").

Standard library only. Each run brings the mirror up to the newest generation:
- no mirror yet: export every origin once (`Accept: application/x-ndjson`) and remember the
  export's `Registry-Generation`;
- otherwise: ask `/registry/changes?since=<g>` (as NDJSON, with `If-None-Match` when the same
  question was asked before), apply the changes, and remember the generation answered;
- a 410 (the mirror is older than the changes the registry keeps), or a 404 (a generation
  this registry never produced): export again.

Every body is checked against its `Registry-Total` before the mirror is replaced, so a cut
stream never leaves a short mirror behind. The mirror file holds one Origin per line in
listing order (the export's own order); beside it, `<file>.state` holds the generation and
the ETag of the last answer.

    REGISTRY_TOKEN=<token> python3 mirror.py --url https://registry.example --file origins.ndjson
    REGISTRY_TOKEN=<token> python3 mirror.py --url ... --file ... --every 60   # keep polling

The token is read from the environment, never from the command line (where `ps` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

NDJSON = "application/x-ndjson"


class Answer:
    """An HTTP answer: status, headers and body."""

    def __init__(self, status: int, headers: Any, body: bytes):
        self.status, self.headers, self.body = status, headers, body


def get(url: str, token: str, headers: dict[str, str]) -> Answer:
    """GET url with the token; HTTP errors are answers too."""
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Accept": NDJSON, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return Answer(answer.status, answer.headers, answer.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


def lines_of(answer: Answer) -> list[dict[str, Any]]:
    """The objects of an NDJSON body, after checking that all of them came."""
    objects = [json.loads(line) for line in answer.body.splitlines() if line]
    expected = int(answer.headers["Registry-Total"])
    if len(objects) != expected:
        raise SystemExit(f"mirror: got {len(objects)} lines of {expected}; nothing changed")
    return objects


def listing_order(record: dict[str, Any]) -> tuple[Any, ...]:
    """The listing's order: allocated addresses as numbers, unallocated after, then id."""
    bans, origin_id = record["bans"], record["origin"]["id"]
    if bans["allocated"]:
        return (0, bans["network"], bans["station"], bans["channel"], origin_id)
    return (1, 0, 0, 0, origin_id)


def write(path: Path, records: list[dict[str, Any]], state: dict[str, Any]) -> None:
    """Replace the mirror and its state, each file whole or not at all."""
    for target, text in (
        (path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)),
        (state_path(path), json.dumps(state) + "\n"),
    ):
        partial = target.with_name(target.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)


def state_path(path: Path) -> Path:
    """Where the mirror's generation and last ETag are kept."""
    return path.with_name(path.name + ".state")


def export(base: str, token: str, path: Path) -> str:
    """Export every origin and make it the mirror."""
    answer = get(f"{base}/registry/origins", token, {})
    if answer.status != 200:
        raise SystemExit(f"mirror: the export answered {answer.status}: {answer.body[:200]!r}")
    records = lines_of(answer)
    generation = int(answer.headers["Registry-Generation"])
    write(path, records, {"generation": generation, "etag": None})
    return f"exported generation {generation}: {len(records)} origins"


def catch_up(base: str, token: str, path: Path) -> str:
    """One step: export when there is no mirror, else apply the changes since its generation."""
    if not path.exists() or not state_path(path).exists():
        return export(base, token, path)
    state = json.loads(state_path(path).read_text(encoding="utf-8"))
    since = state["generation"]
    conditional = {"If-None-Match": state["etag"]} if state["etag"] else {}
    answer = get(f"{base}/registry/changes?since={since}", token, conditional)
    if answer.status == 304:
        return f"generation {since}: not modified"
    if answer.status in (404, 410):
        # 410: older than the oldest change set kept; 404: a generation this registry never
        # produced (a mirror of another database). Either way, start again from an export.
        return f"since {since} is gone ({answer.status}); " + export(base, token, path)
    if answer.status != 200:
        raise SystemExit(f"mirror: changes answered {answer.status}: {answer.body[:200]!r}")
    changes = lines_of(answer)
    generation = int(answer.headers["Registry-Generation"])
    held = {}
    with path.open(encoding="utf-8") as mirror:
        for line in mirror:
            record = json.loads(line)
            held[record["origin"]["id"]] = record
    for change in changes:
        if change["kind"] == "removed":
            held.pop(change["id"], None)
        else:  # added or changed: the record at the generation answered
            held[change["id"]] = change["after"]
    # The ETag belongs to this URL (since=<since>): worth sending only while since stays.
    etag = answer.headers.get("ETag") if generation == since else None
    write(path, sorted(held.values(), key=listing_order), {"generation": generation, "etag": etag})
    if generation == since:
        return f"generation {since}: no changes"
    return f"generation {since} -> {generation}: {len(changes)} changes applied"


def main(argv: list[str] | None = None) -> int:
    """Run once, or every --every seconds."""
    parser = argparse.ArgumentParser(description="Keep an NDJSON mirror of the registry.")
    parser.add_argument("--url", required=True, help="the registry's base URL")
    parser.add_argument("--file", required=True, type=Path, help="the mirror (NDJSON)")
    parser.add_argument("--every", type=float, default=0, help="poll every N seconds")
    args = parser.parse_args(argv)
    token = os.environ.get("REGISTRY_TOKEN")
    if not token:
        print("mirror: set REGISTRY_TOKEN to an access token", file=sys.stderr)
        return 2
    base = args.url.rstrip("/")
    while True:
        print(catch_up(base, token, args.file), flush=True)
        if not args.every:
            return 0
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
