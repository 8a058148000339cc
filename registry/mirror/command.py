"""The `registry mirror` subcommands: sync, status and verify (docs/mirror.md).

Exit status: 0 when the copy is proven at the generation the service answered (or, with
--follow, when stopped by SIGINT or SIGTERM), 1 on an error the mirror could not get past,
2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from registry.mirror.body import Stopped
from registry.mirror.client import WAITING, Client, Failed, Refused
from registry.mirror.polite import GIVE_UP_AFTER_S, GaveUp, Politeness
from registry.mirror.progress import progress_for
from registry.mirror.steps import DigestMismatch, Step
from registry.mirror.stores import NamedTwice, StoreBusy, StoreUnusable, open_store, shown

OK, ERROR, USAGE = 0, 1, 2
# --follow waits its interval give or take this share, so that mirrors started together
# drift apart instead of asking at the same instant for ever.
FOLLOW_JITTER = 0.1


class Usage(Exception):
    """A usage error: exit 2 with this message."""


class CannotGoOn(Exception):
    """An error the mirror could not get past: exit 1 with this message."""


def report(line: str) -> None:
    """One line on standard error, at once (a journal or a pipe reads it as it comes)."""
    print(line, file=sys.stderr, flush=True)


def command_sync(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    """registry mirror sync: one step, or with --follow a step every S seconds."""
    return _run("sync", lambda: _sync(args, settings))


def command_status(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    """registry mirror status: the copy as one JSON object on standard output."""
    return _run("status", lambda: _status(args))


def command_verify(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    """registry mirror verify: recompute the copy's digest and compare it."""
    from registry.mirror.verify import verify

    return _run("verify", lambda: verify(args, settings))


def _run(name: str, command: Callable[[], int]) -> int:
    """Run a subcommand; its errors become a line on standard error and an exit status."""
    try:
        return command()
    except Usage as error:
        report(f"registry mirror {name}: {error}")
        return USAGE
    except (CannotGoOn, Refused, Failed, GaveUp, NamedTwice, StoreBusy, StoreUnusable) as error:
        report(f"registry mirror {name}: {error}")
        return ERROR
    except (sqlite3.Error, psycopg.Error) as error:
        report(f"registry mirror {name}: the store failed: {error}")
        return ERROR


def token_source(args: argparse.Namespace, settings: Mapping[str, Any]) -> Callable[[], str]:
    """What gives the token at each request: --token-file read again each time (a token
    rotated in the file is used from the next request on; a file briefly unreadable while
    it is replaced keeps the last token read), else the one REGISTRY_TOKEN gave."""
    last = token(args, settings)
    if args.token_file is None:
        return lambda: last

    def read() -> str:
        nonlocal last
        with suppress(OSError, UnicodeDecodeError):
            last = Path(args.token_file).read_text(encoding="utf-8").strip() or last
        return last

    return read


def base_url(text: str) -> str:
    """--url as the mirror keeps it: http(s)://host[:port][/prefix], no trailing slash."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise Usage(
            "--url must be what precedes /registry "
            f"(http://host:port or https://host/v1), not {text!r}"
        )
    return text.rstrip("/")


def token(args: argparse.Namespace, settings: Mapping[str, Any]) -> str:
    """The token: the text of --token-file, else REGISTRY_TOKEN (never an argument, which
    `ps` would show to every user of the machine)."""
    if args.token_file is not None:
        try:
            text = Path(args.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise Usage(f"cannot read --token-file {args.token_file}: {error}") from error
        if not text:
            raise Usage(f"--token-file {args.token_file} is empty")
        return text
    value = settings.get("REGISTRY_TOKEN")
    if not value:
        raise Usage("no token: set REGISTRY_TOKEN or give --token-file PATH")
    return str(value)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` (the step under way is rolled back at its next block of
    the body, or the wait between steps ends); one that comes while the mirror waits on the
    service (a request sent, a block of its body) ends that wait and rolls the step back at
    once; a second one interrupts at once."""

    def asked(_signum: int, _frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if WAITING.now:
            raise Stopped

    previous = {number: signal.signal(number, asked) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def proven_step(step: Step, polite: Politeness, export: bool) -> int:
    """One step with its retries; a digest that disagrees rolls it back and exports again,
    once; a second disagreement is an error. The generation reached."""
    try:
        return polite.run(lambda: step.run(export))
    except DigestMismatch as mismatch:
        report(f"{mismatch}: rolled back, exporting again")
    try:
        return polite.run(lambda: step.run(True))
    except DigestMismatch as again:
        raise CannotGoOn(f"{again}: rolled back; the copy keeps its previous generation") from again


def _sync(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    """Check the arguments and the copy's origin, then step once or follow."""
    url = base_url(args.url)
    secret = token_source(args, settings)
    if args.follow is not None and not args.follow > 0:
        raise Usage(f"--follow takes a number of seconds above 0, not {args.follow}")
    store = open_store(args.into, create=True)
    assert store is not None
    try:
        held = store.state()
        if held is not None and held.url != url and not args.reset:
            raise Usage(
                f"{shown(args.into)} holds a copy of {held.url}, not of {url}; "
                "--reset replaces it with an export of the new URL"
            )
        stop = threading.Event()
        client = Client(url, secret)
        step = Step(client, store, url, report, progress_for(sys.stderr), stop)
        try:
            return _once(step, args, stop) if args.follow is None else _follow(step, args, stop)
        finally:
            client.close()
    finally:
        store.close()


def _once(step: Step, args: argparse.Namespace, stop: threading.Event) -> int:
    """One step, retried for a bounded time."""
    bound = GIVE_UP_AFTER_S if args.give_up_after is None else args.give_up_after
    polite = Politeness(report, stop, give_up_after=bound)
    try:
        proven_step(step, polite, export=args.reset)
    except KeyboardInterrupt:
        report("registry mirror sync: interrupted; the step under way was rolled back")
        return 130
    return OK


def _follow(step: Step, args: argparse.Namespace, stop: threading.Event) -> int:
    """A step every --follow seconds until SIGINT or SIGTERM; retries never give up unless
    --give-up-after says so."""
    polite = Politeness(report, stop, give_up_after=args.give_up_after)
    chance = random.Random()
    export = bool(args.reset)
    with stop_on_signals(stop):
        try:
            while not stop.is_set():
                proven_step(step, polite, export)
                export = False
                stop.wait(args.follow * (1 + chance.uniform(-FOLLOW_JITTER, FOLLOW_JITTER)))
        except (Stopped, KeyboardInterrupt):
            report("registry mirror sync: stopped; the step under way was rolled back")
            return OK
    report("registry mirror sync: stopped between steps")
    return OK


def _status(args: argparse.Namespace) -> int:
    """Print the copy's url, generation, origins, digest and synced_at."""
    store = open_store(args.into, create=False)
    if store is None:
        raise CannotGoOn(f"{shown(args.into)} holds no copy")
    try:
        row = store.state()
        if row is None:
            raise CannotGoOn(f"{shown(args.into)} holds no copy")
        print(
            json.dumps(
                {
                    "url": row.url,
                    "generation": row.generation,
                    "origins": store.count(),
                    "digest": row.digest,
                    "synced_at": row.synced_at,
                }
            )
        )
    finally:
        store.close()
    return OK
