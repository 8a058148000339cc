"""`registry serve`: prepare the database and run gunicorn; with --dev (what `make run` does),
a demo graph in a database never loaded, a development secret, and an admin token printed
with curl and `registry mirror sync` lines that work as printed."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

import psycopg

from registry.database.conninfo import connect_primary, resolve_database_url, with_user

# The role `registry serve --dev` serves through on the embedded server (SELECT only).
DEV_READER_ROLE = "registry_reader"
# The share of the demo's origins its twin changes, loaded second by `registry serve --dev`,
# and the printed example that shows them.
DEV_DEMO_CHANGES = 0.02
DEV_CHANGES_EXAMPLE = "/registry/changes?kind=changed&limit=5"


def command_serve(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry serve [--dev]: prepare the database and run gunicorn until it exits.

    With --dev (what `make run` does): the embedded PostgreSQL when DATABASE_URL is unset
    (served through its SELECT-only role DEV_READER_ROLE), a demo graph and then its changed
    twin when the database was never loaded (generations 1 and 2), a generated secret kept in
    the state folder, and
    a ready admin token with curl examples printed before gunicorn starts. An embedded server
    this command started is stopped when gunicorn exits (Ctrl-C); one that was already
    running is left running.
    """
    from registry.database.embedded import embedded_running
    from registry.database.migrations import apply_migrations
    from registry.database.queries import QUERIES
    from registry.database.roles import create_reader_role
    from registry.database.rows import scalar
    from registry.loader.setup import ensure_graph
    from registry.settings import state_dir
    from registry.tokens.development import development_secret, mint_token

    bind = args.bind or str(settings["REGISTRY_BIND"])
    embedded = not settings.get("DATABASE_URL")
    started_here = embedded and not embedded_running(state_dir(settings))
    env = dict(os.environ)
    database_url = resolve_database_url(settings)
    env["DATABASE_URL"] = database_url
    with connect_primary(settings) as conn:
        apply_migrations(conn)
        loaded = scalar(conn, QUERIES["meta/graph_exists"])
        if args.dev and not loaded:
            # A database never loaded: the demo's load is its first generation (publishing
            # an empty graph first would make it generation 2 and take a retention slot),
            # and its changed twin's the second, so /registry/changes has changes to show.
            _load_dev_demo(conn, args.demo_origins, settings)
        ensure_graph(conn)
        if args.dev and embedded:
            # The embedded cluster's own role is a superuser: serve, as production does,
            # through a role that can only read. `registry load` keeps the owner's URL.
            create_reader_role(conn, DEV_READER_ROLE, None)
            env["DATABASE_URL"] = with_user(database_url, DEV_READER_ROLE)
    if args.dev:
        env["REGISTRY_DEV"] = "1"
        has_key = any(
            settings.get(name)
            for name in ("REGISTRY_JWT_SECRET", "REGISTRY_JWT_PUBLIC_KEY", "REGISTRY_JWKS_URL")
        )
        if not has_key:
            env["REGISTRY_JWT_SECRET"] = development_secret(settings)
            settings = {**settings, "REGISTRY_JWT_SECRET": env["REGISTRY_JWT_SECRET"]}
        if settings.get("REGISTRY_JWT_SECRET"):
            token = mint_token(
                settings, roles=["domain_admin"], ttl_seconds=12 * 3600, subject="make-run"
            )
            base = f"http://{bind}"
            print(
                "\nThe Broadcast Registry API is starting on " + base + "\n\n"
                "An admin token (domain_admin, valid 12 hours):\n\n"
                f"  export TOKEN={token}\n\n"
                "Try:\n\n"
                f"  curl -s {base}/summary\n"
                f'  curl -s -H "Authorization: Bearer $TOKEN" {base}/registry/summary\n'
                f'  curl -s -H "Authorization: Bearer $TOKEN" "{base}/registry/origins?limit=2"\n'
                f'  curl -s -H "Authorization: Bearer $TOKEN" "{base}{DEV_CHANGES_EXAMPLE}"\n\n'
                f"Or open {base}/docs in a browser: Authorize with the token, then Try it out.\n\n"
                "Keep a copy of the registry, proven equal after every step (docs/mirror.md):\n\n"
                f"  {mirror_line(base)}\n",
                flush=True,
            )
    env["REGISTRY_BIND"] = bind
    gunicorn = shutil.which("gunicorn", path=os.path.dirname(sys.executable)) or "gunicorn"
    code = _run_until_exit([gunicorn, "wsgi:app"], env)
    if started_here:
        from registry.database.embedded import stop_embedded

        stop_embedded(state_dir(settings))
        print(f"stopped the embedded PostgreSQL under {state_dir(settings)}", flush=True)
    return code


def _load_dev_demo(conn: psycopg.Connection, origins: int, settings: dict[str, Any]) -> None:
    """Load the demo graph (seed 1), then its twin with DEV_DEMO_CHANGES of its origins
    changed: two ordinary loads, each printing its summary line, keeping generations and
    change sets as the settings say (as `registry load` does)."""
    import tempfile

    from registry.loader.demo import write_demo_document
    from registry.loader.demo_twin import changes_line, write_twin_document
    from registry.loader.loading import load_counts_line, load_document
    from registry.settings import keep_changes

    generations, changes = int(settings["REGISTRY_KEEP_GENERATIONS"]), keep_changes(settings)

    def load(spool: Any) -> None:
        """One ordinary load of the spooled document; its summary line."""
        result = load_document(conn, spool, keep_generations=generations, keep_changes=changes)
        print(load_counts_line(result), flush=True)

    print(f"loading a demo graph of {origins:,} origins ...", flush=True)
    with tempfile.TemporaryFile() as spool:
        write_demo_document(spool, origins=origins, seed=1)
        spool.seek(0)
        load(spool)
    with tempfile.TemporaryFile() as spool:
        twin = write_twin_document(spool, origins, seed=1, fraction=DEV_DEMO_CHANGES)
        spool.seek(0)
        print(
            f"loading its changed twin (registry demo --changes {DEV_DEMO_CHANGES}): "
            f"{changes_line(twin)} ...",
            flush=True,
        )
        load(spool)


def _run_until_exit(command: list[str], env: dict[str, str]) -> int:
    """Run command, passing on the signals that stop or reload it; its exit status.

    Ctrl-C reaches both processes from the terminal; a signal sent to this process alone
    (SIGINT, SIGTERM, SIGHUP, SIGQUIT) is passed on, so gunicorn always hears it.
    """
    import signal
    import subprocess

    process = subprocess.Popen(command, env=env)

    def forward(signum: int, _frame: Any) -> None:
        if process.poll() is None:
            process.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    code = process.wait()
    return code if code >= 0 else 128 - code


def mirror_line(base: str) -> str:
    """The `registry mirror sync` line printed beside the curl lines: the command of this
    virtualenv by its full path (it works from any folder), with the printed token."""
    found = shutil.which("registry", path=os.path.dirname(sys.executable)) or "registry"
    return f"REGISTRY_TOKEN=$TOKEN {found} mirror sync --url {base} --into mirror.sqlite"
