"""The `registry` command: load and generate graph documents, manage the database, mint tokens."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import psycopg

from registry.database.conninfo import connect_primary, resolve_database_url
from registry.database.embedded import NoEmbeddedServer
from registry.database.migrations import SchemaNewer
from registry.load_command import VACUUM_WAIT_S, command_db_vacuum, command_load
from registry.serve_command import command_serve
from registry.settings import SettingsError, load_settings


def command_demo(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry demo: write a synthetic graph document, or with --changes F its changed twin."""
    from typing import BinaryIO

    from registry.loader.demo import write_demo_document
    from registry.loader.demo_twin import TwinDocument, changes_line, write_twin_document
    from registry.loader.progress import LoadProgress, TerminalProgress

    progress = TerminalProgress(sys.stderr) if sys.stderr.isatty() else LoadProgress()
    progress.phase("demo", total=args.origins, unit="origins")

    def write(out: BinaryIO) -> TwinDocument | None:
        if args.changes is None:
            write_demo_document(out, origins=args.origins, seed=args.seed, progress=progress)
            return None
        return write_twin_document(out, args.origins, args.seed, args.changes, progress)

    try:
        if args.out in (None, "-"):
            twin = write(sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with open(args.out, "wb") as out:
                twin = write(out)
    finally:
        progress.close()
    if twin is not None:
        print(
            f"registry demo: changes against the seed's demo: {changes_line(twin)}", file=sys.stderr
        )
    return 0


def _fraction(text: str) -> float:
    """--changes F: a number above 0 and at most 1."""
    from registry.loader.demo_twin import check_fraction

    try:
        return check_fraction(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fraction above 0 and at most 1: {text}") from None


def command_db_upgrade(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db upgrade: apply migrations; publish an empty graph where there is none."""
    from registry.database.migrations import SCHEMA_VERSION
    from registry.loader.setup import ensure_graph

    with connect_primary(settings) as conn:
        created = ensure_graph(conn)
    note = " (published an empty graph)" if created else ""
    print(f"schema at version {SCHEMA_VERSION}{note}")
    return 0


def command_db_url(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db url: print the database URL in use (starting the embedded server if it
    exists and is stopped; never creating one)."""
    print(resolve_database_url(settings, create=False))
    return 0


def command_db_is_empty(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db is-empty: exit 0 when the database holds no origins, 1 otherwise."""
    from registry.database.queries import QUERIES
    from registry.database.rows import scalar
    from registry.loader.setup import ensure_graph

    with connect_primary(settings) as conn:
        ensure_graph(conn)
        origins = scalar(conn, QUERIES["meta/count_origins"])
    return 0 if origins == 0 else 1


def command_db_stop(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db stop: stop the embedded server."""
    from registry.database.embedded import EmbeddedStopFailed, stop_embedded
    from registry.settings import state_dir

    folder = state_dir(settings)
    try:
        pid = stop_embedded(folder)
    except EmbeddedStopFailed as failure:
        print(f"registry db stop: {failure}", file=sys.stderr)
        return 1
    if pid is None:
        print(f"no embedded PostgreSQL was running under {folder}")
    else:
        print(f"embedded PostgreSQL under {folder} stopped (its postmaster, pid {pid}, has exited)")
    return 0


def command_db_create_reader(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry db create-reader ROLE: a login role that can SELECT the graph and nothing else."""
    from registry.database.roles import ReaderRoleRefused, create_reader_role
    from registry.loader.setup import ensure_graph

    password = settings.get("REGISTRY_READER_PASSWORD")
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            print("registry db create-reader: no password on standard input", file=sys.stderr)
            return 1
    with connect_primary(settings) as conn:
        ensure_graph(conn)
        try:
            create_reader_role(conn, args.role, password)
        except ReaderRoleRefused as refused:
            print(f"registry db create-reader: {refused}; nothing changed", file=sys.stderr)
            return 1
    note = "" if password is None else ", password set"
    print(f"role {args.role} can now read the graph (SELECT only{note})")
    return 0


def command_status(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry status [--json]: the database, its server, schema, generations and reader roles."""
    import json

    from registry.database.status import get_database_status, status_lines

    conninfo = resolve_database_url(settings, create=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        status = get_database_status(conn)
    if args.json:
        from registry.database.status import display_conninfo

        data = {"conninfo": display_conninfo(conninfo), **status.as_json()}
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(status_lines(status, conninfo)))
    return 0


def command_token(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """registry token: mint a signed development token from the configured secret."""
    from registry.tokens.development import mint_token, parse_duration

    try:
        ttl = parse_duration(args.ttl)
    except ValueError as error:
        print(f"registry token: {error}", file=sys.stderr)
        return 2
    roles = [role for role in args.roles.split(",") if role]
    print(mint_token(settings, roles=roles, ttl_seconds=ttl, subject=args.sub))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="registry", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    load = commands.add_parser("load", help="replace the graph with a graph document (JSON Lines)")
    load.add_argument("path", metavar="PATH", help="the document, or - for standard input")
    load.add_argument(
        "--dry-run",
        action="store_true",
        help="run every check and compute the changes, then roll back: nothing changes",
    )
    load.add_argument(
        "--allow-empty", action="store_true", help="load a document with no origin record"
    )
    load.add_argument(
        "--force",
        action="store_true",
        help="load even if it removes more than REGISTRY_MAX_REMOVED_PERCENT of the origins",
    )
    load.set_defaults(run=command_load)

    demo = commands.add_parser("demo", help="write a synthetic graph document")
    demo.add_argument("--origins", type=int, default=10_000, help="about how many origins")
    demo.add_argument("--seed", type=int, default=1, help="the same seed gives the same document")
    demo.add_argument("--out", default=None, help="output file (default: standard output)")
    demo.add_argument(
        "--changes",
        type=_fraction,
        default=None,
        metavar="F",
        help="the seed's document with a fraction F (0 < F <= 1) of its origins removed, "
        "changed or added, the same every time (docs/loading.md)",
    )
    demo.set_defaults(run=command_demo)

    db = commands.add_parser("db", help="the database: upgrade, url, stop, create-reader, vacuum")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="DB_COMMAND")
    db_commands.add_parser("upgrade", help="apply migrations").set_defaults(run=command_db_upgrade)
    db_commands.add_parser("url", help="print the database URL").set_defaults(run=command_db_url)
    db_commands.add_parser("is-empty", help="exit 0 when no origins are loaded").set_defaults(
        run=command_db_is_empty
    )
    db_commands.add_parser("stop", help="stop the embedded server").set_defaults(
        run=command_db_stop
    )
    reader = db_commands.add_parser("create-reader", help="create a SELECT-only login role")
    reader.add_argument("role", metavar="ROLE")
    reader.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the role's password from the first line of standard input "
        "(else REGISTRY_READER_PASSWORD, else none); it is sent to the server hashed",
    )
    reader.set_defaults(run=command_db_create_reader)
    vacuum = db_commands.add_parser(
        "vacuum", help="make a generation's read model all-visible (index-only scans)"
    )
    vacuum.add_argument("--generation", type=int, default=None, help="default: the live one")
    vacuum.add_argument("--horizon", type=int, default=None, help=argparse.SUPPRESS)
    vacuum.add_argument(
        "--wait-s",
        type=float,
        default=VACUUM_WAIT_S,
        help="how long to wait for older snapshots (exports) to end (default: 7 days)",
    )
    vacuum.set_defaults(run=command_db_vacuum)

    _add_mirror_commands(commands)

    status = commands.add_parser(
        "status", help="the database: server, pg_trgm, schema, generations, reader roles"
    )
    status.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    status.set_defaults(run=command_status)

    token = commands.add_parser("token", help="mint a development token (HS256 secret needed)")
    token.add_argument("--roles", default="domain_admin", help="comma-separated roles")
    token.add_argument("--ttl", default="1h", help="lifetime: 90s, 15m, 1h, 1d")
    token.add_argument("--sub", default="registry-cli", help="the token's subject")
    token.set_defaults(run=command_token)
    serve = commands.add_parser("serve", help="prepare the database and run gunicorn")
    serve.add_argument("--dev", action="store_true", help="development mode (make run)")
    serve.add_argument(
        "--bind",
        default=None,
        help="host:port to listen on (default: REGISTRY_BIND, else 127.0.0.1:8000)",
    )
    serve.add_argument(
        "--demo-origins",
        type=int,
        default=10_000,
        help="origins in the demo graph (then its changed twin) loaded into an empty database",
    )
    serve.set_defaults(run=command_serve)
    return parser


def _add_mirror_commands(commands: Any) -> None:
    """registry mirror sync|status|verify (docs/mirror.md); their code is imported when run."""
    mirror = commands.add_parser("mirror", help="keep a proven copy of a registry (docs/mirror.md)")
    actions = mirror.add_subparsers(dest="mirror_command", required=True, metavar="MIRROR_COMMAND")
    into = {"metavar": "TARGET", "required": True, "help": "a SQLite file or a postgresql:// URL"}
    token_file = {"metavar": "PATH", "default": None, "help": "the token (else REGISTRY_TOKEN)"}
    # No abbreviations: `--token SECRET` must be refused, not read as --token-file SECRET.
    sync = actions.add_parser(
        "sync", help="bring the copy to the newest generation, proven", allow_abbrev=False
    )
    sync.add_argument("--url", required=True, help="what precedes /registry")
    sync.add_argument("--into", **into)
    seconds = {"type": float, "default": None, "metavar": "SECONDS"}
    sync.add_argument("--follow", **seconds, help="step every SECONDS until SIGINT or SIGTERM")
    sync.add_argument("--token-file", **token_file)
    sync.add_argument("--reset", action="store_true", help="export again, even another URL's copy")
    sync.add_argument("--give-up-after", **seconds, help="retry for SECONDS (300; --follow: ever)")
    sync.set_defaults(run=_mirror("command_sync"))
    status = actions.add_parser("status", help="the copy as one JSON object")
    status.add_argument("--into", **into)
    status.set_defaults(run=_mirror("command_status"))
    verify = actions.add_parser(
        "verify", help="recompute the copy's digest and compare it", allow_abbrev=False
    )
    verify.add_argument("--into", **into)
    verify.add_argument("--url", default=None, help="compare with this service's digest too")
    verify.add_argument("--token-file", **token_file)
    verify.add_argument("--repair", action="store_true", help="export again on a disagreement")
    verify.set_defaults(run=_mirror("command_verify"))


def _mirror(name: str) -> Any:
    """A mirror subcommand that imports registry.mirror only when it runs."""

    def run(args: argparse.Namespace, settings: dict[str, Any]) -> int:
        from registry.mirror import command

        return int(getattr(command, name)(args, settings))

    return run


def _command_name(args: argparse.Namespace) -> str:
    """The subcommand run, as typed: `load`, `db upgrade`, `db create-reader`."""
    if args.command == "db":
        return f"db {args.db_command}"
    return str(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `registry` console command."""
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"registry: {error}", file=sys.stderr)
        return 2
    try:
        return int(args.run(args, settings))
    except SettingsError as error:
        print(f"registry: {error}", file=sys.stderr)
        return 2
    except psycopg.OperationalError as error:
        print(f"registry: cannot reach the database: {error}", file=sys.stderr)
        return 1
    except NoEmbeddedServer as missing:
        print(f"registry: {missing}", file=sys.stderr)
        return 1
    except SchemaNewer as newer:
        print(f"registry {_command_name(args)}: {newer}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
