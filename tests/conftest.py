"""Shared fixtures: a real PostgreSQL (DATABASE_URL, else an embedded one of the run's own),
fresh databases per test run (dropped at the end), graphs loaded through the real loader, and
real tokens."""

from __future__ import annotations

import io
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import orjson
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from registry.database.conninfo import with_database
from registry.database.embedded import embedded_database_url, stop_embedded
from registry.loader.loading import LoadOptions, load_document
from registry.settings import load_settings

# The documented worked example and its answers, kept with the tests.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TEST_SECRET = "test-secret-that-is-long-enough-for-hs256-0123456789"


# The files that take longest, longest first (seconds in `make test` on two cores, three
# processes): they run first. pytest-xdist hands a process its next file while the one it
# runs has two tests left, and by default orders files by their number of tests, so files of
# a few long tests came last and queued behind one another: the run ended with one process
# busy for 40 s while the others idled. Short files last fill the gaps instead. A name that
# no longer exists fails the run, so the list cannot rot unseen.
LONGEST_FIRST = (
    "tests/mirror/test_copy_kills.py",  # 230 to 400 (alone, machine shared: 64 kills)
    "tests/e2e/test_nginx_exports.py",  # 160
    "tests/e2e/test_export_capacity.py",  # 150
    "tests/api/test_query_plans.py",  # 70 (one 40,000-origin graph and three twins)
    "tests/api/test_schemathesis.py",  # 65
    "tests/mirror/test_copy_cuts.py",  # 115 (measured alone, machine shared)
    "tests/mirror/test_copy_during_loads.py",  # 80 (measured alone, machine shared)
    "tests/mirror/test_copy_recovery.py",  # 75 (measured alone, machine shared)
    "tests/mirror/test_copy_follow.py",  # 50 (measured alone, machine shared)
    "tests/mirror/test_copy_verify.py",  # 40 (measured alone, machine shared)
    "tests/mirror/test_copy_steps.py",  # 40 (measured alone, machine shared)
    "tests/properties/test_catchup_sweep.py",  # 41
    "tests/properties/test_catchup_chain.py",  # 37
    "tests/e2e/test_export_restart.py",  # 36 (one process)
    "tests/e2e/test_export_limit.py",  # 33 (one process)
    "tests/e2e/test_paths_operators_take.py",  # 41
    "tests/loader/test_create_reader.py",  # 36
    "tests/e2e/test_mirror_sync.py",  # 26 to 46 alone on a busy machine (one gunicorn a test)
    "tests/properties/test_generation_sweep.py",  # 30
    "tests/e2e/test_mirror_follow.py",  # 25 to 29 alone (a registry mirror process a test)
    "tests/e2e/test_mirror_verify.py",  # 25 to 29 alone
    "tests/e2e/test_docs_page.py",  # 30
    "tests/mirror/test_copy_refusals.py",  # 35 (measured alone, machine shared)
    "tests/properties/test_export_listing.py",  # 26
    "tests/mirror/test_copy_property.py",  # 25 (measured alone, machine shared)
    "tests/e2e/test_export_memory.py",  # 26
    "tests/loader/test_load_changes.py",  # 26
    "tests/properties/test_listing_sweep.py",  # 22
    "tests/e2e/test_mirror_retries.py",  # 21 to 25 alone (5 s of them the waits it checks)
    "tests/properties/test_change_set.py",  # 21
    "tests/properties/test_lookups.py",  # 20
    "tests/unit/test_common_lines.py",  # 19
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use a database fixture get the db marker, so `-m db` selects them; the
    longest files come first (LONGEST_FIRST), the others keep their order."""
    for item in items:
        if {"server_url", "database_factory"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
    missing = [name for name in LONGEST_FIRST if not (config.rootpath / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names no file: {missing}")
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


# Ports held bound and never listening, for as long as the run lasts (dead_port).
_DEAD_PORTS: list[socket.socket] = []


def dead_port() -> int:
    """A loopback port where a connection is refused at once, for the whole run.

    Bound but never listening, and held: a port merely found free and let go could be taken
    meanwhile by another process on a shared machine, and a "dead" server would answer.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    _DEAD_PORTS.append(sock)
    return int(sock.getsockname()[1])


@pytest.fixture(scope="session", autouse=True)
def _release_dead_ports() -> Iterator[None]:
    """Close the ports dead_port held, once the run is over."""
    yield
    while _DEAD_PORTS:
        _DEAD_PORTS.pop().close()


# With DATABASE_URL unset, a run has an embedded server of its own, in a folder it removes
# at the end: it never touches the `.registry` server of `make run`, and, being thrown away,
# it keeps no durability (fsync off: each index a load builds otherwise waits for a flush to
# disk; a 20-origin load took 0.52 s with it and 0.28 s without on PostgreSQL 15). Under
# pytest-xdist the controller starts it before the workers, which find its folder here.
RUN_SERVER_FOLDER = "REGISTRY_TEST_SERVER_FOLDER"
_RUN_SERVER = pytest.StashKey[Path]()


def start_run_server() -> Path:
    """A new embedded server in a temporary folder, without durability; its folder."""
    folder = Path(tempfile.mkdtemp(prefix="registry-test-server-"))
    with psycopg.connect(embedded_database_url(folder), autocommit=True) as conn:
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
    return folder


def stop_run_server(folder: Path) -> None:
    """Stop the run's server and remove its folder."""
    try:
        stop_embedded(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, start the run's server once, before the workers start."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if load_settings().get("DATABASE_URL"):
        return
    folder = start_run_server()
    os.environ[RUN_SERVER_FOLDER] = str(folder)
    config.stash[_RUN_SERVER] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the server pytest_configure started."""
    folder = config.stash.get(_RUN_SERVER, None)
    if folder is not None:
        stop_run_server(folder)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """The PostgreSQL server the tests use: DATABASE_URL, else the run's own embedded one."""
    settings = load_settings()
    if settings.get("DATABASE_URL"):
        yield str(settings["DATABASE_URL"])
        return
    shared = os.environ.get(RUN_SERVER_FOLDER)
    if shared:
        yield embedded_database_url(Path(shared))
        return
    folder = start_run_server()
    try:
        yield embedded_database_url(folder)
    finally:
        stop_run_server(folder)


@pytest.fixture(scope="session")
def database_factory(server_url: str) -> Iterator[Callable[..., str]]:
    """Make fresh databases on the test server; every one is dropped when the run ends.

    On the run's own embedded server (DATABASE_URL unset) they go with the server, whose folder
    the run removes: dropping each first cost the end of every worker's share of make test
    13 to 39 s (a DROP DATABASE waits for a checkpoint), and nothing else ever sees them.
    """
    made: list[str] = []
    thrown_away = not load_settings().get("DATABASE_URL")
    run = uuid.uuid4().hex[:8]

    def make(template: str | None = None) -> str:
        """A fresh database; a copy of template (a database made here, with no session in
        it) when given, which is cheaper than loading the same graph again."""
        name = f"registry_test_{run}_{len(made)}"
        create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            source = conninfo_to_dict(template)["dbname"]
            create = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(str(source))
            )
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(create)
        made.append(name)
        return with_database(server_url, name)

    yield make
    if thrown_away:
        return

    def drop(name: str) -> None:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    # Side by side: each DROP DATABASE waits for a checkpoint (PostgreSQL 15 with fsync on:
    # 0.3 to 1.4 s each while other tests load), and drops waiting at once share one. Thirty
    # databases beside a loading session: one after another 15.1 s, 4 at once 10.9 s, 16 at
    # once 8.5 s (the first checkpoint, about 6 s, flushes what the loads wrote before it).
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(drop, made))


def document(records: list[dict[str, Any]]) -> bytes:
    """A graph document (JSON Lines) from records."""
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def load_records(conninfo: str, records: list[dict[str, Any]] | bytes) -> None:
    """Load a graph document through the real loader (an empty one too: the API's tests
    build empty graphs on purpose, past the guard of docs/loading.md, Dry run and guards)."""
    payload = records if isinstance(records, bytes) else document(records)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(conn, io.BytesIO(payload), options=LoadOptions(allow_empty=True))


@pytest.fixture(scope="session")
def example_document() -> bytes:
    """The documented worked example."""
    return (FIXTURES / "small-graph.jsonl").read_bytes()


@pytest.fixture(scope="session")
def example_expected() -> dict[str, Any]:
    """The documented answers for the worked example."""
    return orjson.loads((FIXTURES / "small-graph.expected.json").read_bytes())


@pytest.fixture(scope="session")
def example_db(database_factory: Callable[[], str], example_document: bytes) -> str:
    """A database holding the worked example."""
    conninfo = database_factory()
    load_records(conninfo, example_document)
    return conninfo


def app_config(conninfo: str, **extra: Any) -> dict[str, Any]:
    """Test configuration: one database and the HS256 test secret."""
    return {
        "TESTING": True,
        "DATABASE_URL": conninfo,
        "REGISTRY_JWT_SECRET": TEST_SECRET,
        "REGISTRY_JWT_ALGORITHMS": "HS256",
        "REGISTRY_POOL_MAX_SIZE": 2,
        # A test may check an export's headers and leave its body to the garbage collector;
        # the export limit is tested over real HTTP (tests/e2e/test_export_capacity.py).
        "REGISTRY_MAX_EXPORTS": 64,
        **extra,
    }


@pytest.fixture(scope="session")
def example_app(example_db: str) -> Iterator[Any]:
    """The app over the worked example."""
    from app import create_app

    app = create_app(app_config(example_db))
    yield app
    app.extensions["registry_db"].close()


@pytest.fixture
def client(example_app: Any) -> Any:
    """A test client of the app over the worked example."""
    return example_app.test_client()


def make_token(roles: Any = ("domain_admin",), secret: str = TEST_SECRET, **claims: Any) -> str:
    """A real HS256 token signed with the test secret, valid for 12 hours: modules make theirs
    at import, and a slow run on a busy machine must not outlive them."""
    payload: dict[str, Any] = {"sub": "tester", "exp": int(time.time()) + 12 * 3600}
    if roles is not None:
        payload["roles"] = list(roles) if isinstance(roles, tuple | list) else roles
    payload.update(claims)
    return jwt.encode(payload, secret, algorithm="HS256")


@pytest.fixture(scope="session")
def admin_headers() -> dict[str, str]:
    """An Authorization header of a domain admin."""
    return {"Authorization": f"Bearer {make_token()}"}
