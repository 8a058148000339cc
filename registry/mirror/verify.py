"""`registry mirror verify`: the copy's digest recomputed from every record it holds, and
compared with its mirror row's and, with --url, with the service's for that generation
(docs/mirror.md, "Commands")."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Mapping
from typing import Any

from registry.digest import as_hex, text_hash
from registry.mirror.client import JSON, Client, Failed
from registry.mirror.command import (
    OK,
    CannotGoOn,
    Usage,
    base_url,
    proven_step,
    report,
    token,
)
from registry.mirror.polite import Politeness
from registry.mirror.progress import progress_for
from registry.mirror.steps import Step
from registry.mirror.stores import MirrorRow, Store, open_store, shown

GENERATIONS_PATH = "/registry/generations"


def verify(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    """Exit 0 when the records, the mirror row and (with --url) the service agree; else
    name the first disagreement and exit 1, or with --repair export again."""
    url = None if args.url is None else base_url(args.url)
    secret = None if url is None else token(args, settings)
    store = open_store(args.into, create=False)
    if store is None:
        raise CannotGoOn(f"{shown(args.into)} holds no copy")
    try:
        row, origins, computed = recompute(store)
        if url is not None and url != row.url:
            raise Usage(f"{shown(args.into)} holds a copy of {row.url}, not of {url}")
        problem = _disagreement(row, computed, url, secret)
        if problem is None:
            agrees = ", the service's too" if url is not None else ""
            print(f"generation {row.generation}: {origins} origins, digest ok{agrees}")
            return OK
        if not args.repair:
            raise CannotGoOn(problem)
        report(f"{problem}: exporting again")
        _repair(store, url or row.url, secret or token(args, settings))
        return OK
    finally:
        store.close()


def recompute(store: Store) -> tuple[MirrorRow, int, str]:
    """The mirror row, the origins held and the digest of their records, all read from one
    snapshot of the store."""
    with store.snapshot() as snapshot:
        if snapshot.row is None:
            raise CannotGoOn(f"{shown(store.target)} holds no copy")
        total = origins = 0
        for batch in snapshot.records:
            total += sum(text_hash(record) for record in batch)
            origins += len(batch)
        return snapshot.row, origins, as_hex(total)


def _disagreement(row: MirrorRow, computed: str, url: str | None, secret: str | None) -> str | None:
    """The first of the three that disagrees, said in a line; None when they agree."""
    generation = row.generation
    if computed != row.digest:
        return (
            f"generation {generation}: the records held add up to digest {computed}, "
            f"the mirror row says {row.digest}"
        )
    if url is None or secret is None:
        return None
    client = Client(url, secret)
    try:
        served = service_digest(client, generation)
    finally:
        client.close()
    if served is None:
        return (
            f"generation {generation}: the service gives no digest for it (no longer listed "
            "by /registry/generations, or loaded before digests)"
        )
    if served != row.digest:
        return (
            f"generation {generation}: the copy's digest is {row.digest}, the service's is {served}"
        )
    return None


def service_digest(client: Client, generation: int) -> str | None:
    """The digest /registry/generations gives for `generation`, or None when it lists
    none (a null digest, or the generation no longer listed)."""
    polite = Politeness(report, threading.Event())

    def ask() -> Any:
        with client.get(GENERATIONS_PATH, JSON) as answer:
            if answer.status != 200:
                raise Failed(f"GET {GENERATIONS_PATH} answered {answer.status}: {answer.message()}")
            return answer.json()

    listed = polite.run(ask)
    for entry in listed.get("generations", []):
        if entry.get("generation") == generation:
            digest = entry.get("digest")
            return None if digest is None else str(digest)
    return None


def _repair(store: Store, url: str, secret: str) -> None:
    """Replace the copy with a proven export of url."""
    stop = threading.Event()
    client = Client(url, secret)
    try:
        step = Step(client, store, url, report, progress_for(sys.stderr), stop)
        proven_step(step, Politeness(report, stop), export=True)
    finally:
        client.close()
