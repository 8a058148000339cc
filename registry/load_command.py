"""`registry load`: a document into the database, or a dry run of it (docs/loading.md, Dry run and
guards); and `registry db vacuum`, which finishes a load's read model once older snapshots have
ended."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

import psycopg

from registry.database.conninfo import connect_primary
from registry.settings import keep_changes

# How long `registry db vacuum` waits for older snapshots at most: an export read at 10 KB/s
# can last a day; a week covers any the service would let finish.
VACUUM_WAIT_S = 7 * 24 * 3600.0


def database_failure(error: psycopg.Error) -> str:
    """One line saying what the database did to a load: lost, or refused it and why."""
    diag = error.diag
    message = (diag.message_primary or str(error).strip() or type(error).__name__).splitlines()[0]
    sqlstate = error.sqlstate
    if sqlstate is None or sqlstate.startswith("08"):
        return f"lost the connection to the database during the load: {message}"
    return f"the database refused the load: {message} (SQLSTATE {sqlstate})"


def command_load(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry load PATH|-: replace the graph with a document."""
    from registry.loader.changes import LoadRefused, dry_run_lines
    from registry.loader.loading import (
        LoadOptions,
        LoadRejected,
        generation_lines,
        load_counts_line,
        load_document,
    )
    from registry.loader.progress import LoadProgress, TerminalProgress

    stream: IO[bytes]
    try:
        stream = sys.stdin.buffer if args.path == "-" else open(args.path, "rb")  # noqa: SIM115
    except OSError as error:
        print(f"registry load: cannot read {args.path}: {error.strerror}", file=sys.stderr)
        return 1
    # On a terminal, a line per phase (docs/loading.md); piped, only the summary line.
    progress = LoadProgress()
    if sys.stderr.isatty():
        progress = TerminalProgress(sys.stderr, _file_size(stream), stream.tell)
    try:
        try:
            conn = connect_primary(settings)
        except psycopg.OperationalError as error:
            progress.close()
            reason = (str(error).strip() or type(error).__name__).splitlines()[0]
            print(
                "registry load: cannot reach the database: no primary (read-write) database "
                f"server could be reached ({reason}); nothing changed.",
                file=sys.stderr,
            )
            return 1
        with conn:
            try:
                result = load_document(
                    conn,
                    stream,
                    progress,
                    keep_generations=int(settings["REGISTRY_KEEP_GENERATIONS"]),
                    keep_changes=keep_changes(settings),
                    options=LoadOptions(
                        dry_run=args.dry_run,
                        allow_empty=args.allow_empty,
                        force=args.force,
                        max_removed_percent=settings.get("REGISTRY_MAX_REMOVED_PERCENT"),
                        vacuum_wait_s=float(settings["REGISTRY_LOAD_VACUUM_WAIT_S"]),
                    ),
                )
            except psycopg.Error as error:
                # Not the document's fault (its problems are LoadRejected): the transaction
                # is rolled back, so the served graph is the one before.
                progress.close()
                print(
                    f"registry load: {database_failure(error)}; nothing changed.", file=sys.stderr
                )
                return 1
    except LoadRejected as rejected:
        progress.close()
        print("registry load: the document was not loaded; nothing changed.", file=sys.stderr)
        print(rejected.report(), file=sys.stderr)
        return 1
    except LoadRefused as refused:
        progress.close()
        print(f"registry load: {refused}", file=sys.stderr)
        return 1
    finally:
        progress.close()
        if stream is not sys.stdin.buffer:
            stream.close()
    for role in result.forgotten_readers:
        print(
            f"registry load: warning: reader role {role} no longer exists; forgotten"
            " (registry_meta.reader_roles), later loads grant it nothing",
            file=sys.stderr,
        )
    print(load_counts_line(result))
    if result.dry_run and result.changes is not None:
        for line in dry_run_lines(result.changes):
            print(line)
        return 0
    for line in generation_lines(result):
        print(line)
    read_model = result.read_model
    if read_model is not None and not read_model.complete and result.horizon is not None:
        # Older snapshots outlived the wait: a detached `registry db vacuum` waits for them.
        pid = _start_vacuum(read_model.generation, result.horizon)
        print(f"{read_model.line()}; registry db vacuum (pid {pid}) finishes it once they end")
    return 0


def _start_vacuum(generation: int, horizon: str) -> int:
    """Start `registry db vacuum` for generation in a session of its own, detached from this
    command (cron's), with the same environment; its pid."""
    import subprocess

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "registry.cli",
            "db",
            "vacuum",
            "--generation",
            str(generation),
            "--horizon",
            horizon,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return process.pid


def command_db_vacuum(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db vacuum [--generation N]: make a generation's read model all-visible,
    waiting (up to --wait-s) for the snapshots older than it, or than now, to end."""
    from registry.database.queries import QUERIES
    from registry.database.rows import one_row, scalar
    from registry.loader import visibility

    with connect_primary(settings) as conn:
        if not scalar(conn, QUERIES["meta/graph_exists"]):
            print("registry db vacuum: no graph loaded yet; nothing to do")
            return 0
        generation = args.generation
        if generation is None:
            # a graph is loaded: its one graph_info row is numbered
            generation = int(one_row(conn, QUERIES["meta/get_current_generation"])["generation"])
        if not visibility.lock_generation(conn, generation):
            print(f"registry db vacuum: generation {generation} is being finished already")
            return 0
        done = visibility.settle(
            conn,
            generation,
            visibility.horizon(conn) if args.horizon is None else str(args.horizon),
            args.wait_s,
            schema=lambda: visibility.generation_schema(conn, generation),
        )
    if done is None:
        print(f"generation {generation} is no longer kept; nothing to do")
        return 0
    print(done.line())
    return 0 if done.complete else 1


def _file_size(stream: IO[bytes]) -> int | None:
    """The size of a regular file (for the time left); None for a pipe or a terminal."""
    import os
    import stat

    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None
