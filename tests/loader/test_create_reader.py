"""`registry db create-reader` as an operator runs it: it makes a role that can only read, refuses
a role that could do more, and never lets the password travel in clear."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.cli import Finished, run_cli
from tests.conftest import load_records

ROOT = Path(__file__).resolve().parents[2]


def create_reader(
    conninfo: str, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> Finished:
    """`registry db create-reader ARGS` against one database, in this process (tests/cli.py)."""
    return run_cli(["db", "create-reader", *args], {"DATABASE_URL": conninfo, **(env or {})}, stdin)


def create_reader_process(
    conninfo: str, *args: str, stdin: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`registry db create-reader ARGS` as a process of its own, stdin piped to it."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "db", "create-reader", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo, **(env or {})},
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def example_template(database_factory: Callable[..., str], example_document: bytes) -> str:
    """The worked example, loaded once for the module: each test gets a copy of it."""
    conninfo = database_factory()
    load_records(conninfo, example_document)
    return conninfo


@pytest.fixture
def graph_db(database_factory: Callable[..., str], example_template: str) -> str:
    """A database of its own holding the worked example (a test grants and revokes in it)."""
    return database_factory(template=example_template)


@pytest.fixture
def new_role(graph_db: str) -> Iterator[Callable[[str], str]]:
    """Make roles with the given attributes (cluster-wide); each is dropped afterwards."""
    made: list[str] = []

    def make(attributes: str = "") -> str:
        role = f"registry_test_role_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(graph_db, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN " + attributes).format(sql.Identifier(role)))
        made.append(role)
        return role

    yield make
    with psycopg.connect(graph_db, autocommit=True) as conn:
        for role in made:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def role_settings(conninfo: str, role: str) -> list[str]:
    """The role's own settings (ALTER ROLE ... SET), in any database."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT unnest(setconfig) FROM pg_db_role_setting s JOIN pg_roles r"
            " ON r.oid = s.setrole WHERE r.rolname = %s",
            [role],
        ).fetchall()
    return [row[0] for row in rows]


@pytest.mark.parametrize(
    ("attributes", "why"),
    [
        ("SUPERUSER", "superuser"),
        ("CREATEROLE", "CREATEROLE"),
        ("CREATEDB", "CREATEDB"),
        ("REPLICATION", "REPLICATION"),
    ],
)
def test_a_role_with_powers_is_refused(graph_db, new_role, attributes: str, why: str):
    """A role that could do more than read: exit 1, a message saying why, the role untouched."""
    role = new_role(attributes)
    done = create_reader(graph_db, role)
    assert done.returncode == 1, done.stdout
    assert why in done.stderr and role in done.stderr
    assert "Traceback" not in done.stderr
    assert role_settings(graph_db, role) == []


def test_the_loaders_own_role_is_refused(graph_db):
    """The issue's case: `create-reader postgres` (the loader, a superuser) is refused."""
    with psycopg.connect(graph_db) as conn:
        me = conn.execute("SELECT current_user").fetchone()[0]  # type: ignore[index]
    before = role_settings(graph_db, me)
    done = create_reader(graph_db, me)
    assert done.returncode == 1
    assert "the role running this command" in done.stderr
    assert role_settings(graph_db, me) == before


def test_an_owner_of_the_graph_or_a_member_of_the_loader_is_refused(graph_db, new_role):
    """Owning a table of the registry, or inheriting the loader's rights, is more than reading."""
    owner, member = new_role(), new_role()
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE registry_meta.extra (x int)"))
        conn.execute(
            sql.SQL("ALTER TABLE registry_meta.extra OWNER TO {}").format(sql.Identifier(owner))
        )
        me = conn.execute("SELECT current_user").fetchone()[0]  # type: ignore[index]
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(me), sql.Identifier(member)))
    done = create_reader(graph_db, owner)
    assert done.returncode == 1 and "owns" in done.stderr
    done = create_reader(graph_db, member)
    assert done.returncode == 1 and "the role running this command" in done.stderr
    assert role_settings(graph_db, owner) == role_settings(graph_db, member) == []


def test_the_password_is_read_from_stdin_and_sent_hashed(graph_db, new_role):
    """No --password in argv; the password from standard input is stored as a SCRAM verifier
    computed by the client, even when the server itself would hash with md5."""
    role = new_role()
    refused = create_reader(graph_db, role, "--password", "s3cret-in-argv")
    assert refused.returncode == 2
    done = create_reader_process(
        graph_db,
        role,
        "--password-stdin",
        stdin="correct horse battery staple\n",
        env={"PGOPTIONS": "-c password_encryption=md5"},
    )
    assert done.returncode == 0, done.stderr
    with psycopg.connect(graph_db) as conn:
        stored = conn.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = %s", [role]
        ).fetchone()[0]  # type: ignore[index]
    assert stored.startswith("SCRAM-SHA-256$4096:")


def test_the_password_can_come_from_the_environment(graph_db, new_role):
    """REGISTRY_READER_PASSWORD, for scripts: also stored as a SCRAM verifier."""
    role = new_role()
    done = create_reader(
        graph_db,
        role,
        env={"REGISTRY_READER_PASSWORD": "from-the-env", "PGOPTIONS": "-c password_encryption=md5"},
    )
    assert done.returncode == 0, done.stderr
    with psycopg.connect(graph_db) as conn:
        stored = conn.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = %s", [role]
        ).fetchone()[0]  # type: ignore[index]
    assert stored.startswith("SCRAM-SHA-256$")


def test_the_reader_cannot_create_in_public_whatever_the_server_version(graph_db, new_role):
    """PostgreSQL 14 and older let PUBLIC create in schema public; the reader must not."""
    role = new_role()
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # as older servers have it
    done = create_reader(graph_db, role)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(graph_db) as conn:
        can_create = conn.execute(
            "SELECT has_schema_privilege(%s, 'public', 'CREATE')", [role]
        ).fetchone()[0]  # type: ignore[index]
    assert can_create is False
    assert role_settings(graph_db, role) == ["default_transaction_read_only=on"]


@pytest.mark.parametrize(
    "power",
    [
        "pg_execute_server_program",
        "pg_read_server_files",
        "pg_write_server_files",
        "pg_signal_backend",
        "pg_write_all_data",
        "pg_checkpoint",
    ],
)
@pytest.mark.parametrize("through", ["directly", "through another role", "without inheriting"])
def test_a_member_of_a_predefined_role_beyond_reading_is_refused(
    graph_db, new_role, power: str, through: str
):
    """Server-side powers (running programs, files, signals, writing everything) are refused,
    whether granted to the role itself or to a role it belongs to; the message names it."""
    role = new_role()
    grantee = role
    with psycopg.connect(graph_db, autocommit=True) as conn:
        if through != "directly":
            grantee = new_role()
            conn.execute(
                sql.SQL("GRANT {} TO {}").format(sql.Identifier(grantee), sql.Identifier(role))
            )
            if through == "without inheriting":
                conn.execute(sql.SQL("ALTER ROLE {} NOINHERIT").format(sql.Identifier(role)))
        grant = sql.SQL("GRANT {} TO {}")
        conn.execute(grant.format(sql.Identifier(power), sql.Identifier(grantee)))
    done = create_reader(graph_db, role)
    assert done.returncode == 1, done.stdout
    assert power in done.stderr and role in done.stderr
    assert "SELECT only" not in done.stdout
    assert role_settings(graph_db, role) == []


def test_a_member_of_the_reading_predefined_roles_is_accepted(graph_db, new_role):
    """Reading statistics and settings is reading: pg_monitor is no reason to refuse."""
    role = new_role()
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT pg_monitor TO {}").format(sql.Identifier(role)))
    done = create_reader(graph_db, role)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("grant", "why"),
    [
        ("GRANT CREATE ON SCHEMA {schema} TO {role}", "CREATE on schema registry_test_scratch"),
        ("GRANT CREATE ON SCHEMA public TO {role}", "CREATE on schema public"),
        ("GRANT CREATE ON DATABASE {database} TO {role}", "create schemas"),
        ("GRANT TEMPORARY ON DATABASE {database} TO {role}", "temporary tables"),
    ],
)
def test_a_role_that_can_create_is_refused(graph_db, new_role, grant: str, why: str):
    """Creating in any schema, creating schemas and making temporary tables are refused."""
    role = new_role()
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS registry_test_scratch")
        database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(
            sql.SQL(grant).format(
                schema=sql.Identifier("registry_test_scratch"),
                role=sql.Identifier(role),
                database=sql.Identifier(database),
            )
        )
    done = create_reader(graph_db, role)
    assert done.returncode == 1, done.stdout
    assert why in done.stderr and role in done.stderr
    assert role_settings(graph_db, role) == []


def test_a_created_reader_has_no_server_side_powers(graph_db, new_role):
    """The role the command makes cannot make a temporary table (PUBLIC may by default), nor
    create anywhere, nor act as any predefined role beyond reading."""
    role = "registry_test_reader_" + uuid.uuid4().hex[:8]
    done = create_reader(graph_db, role)
    try:
        assert done.returncode == 0, done.stderr
        with psycopg.connect(graph_db, autocommit=True) as conn:
            powers = conn.execute(
                "SELECT has_database_privilege(%(role)s, current_database(), 'TEMPORARY'),"
                " has_database_privilege(%(role)s, current_database(), 'CREATE'),"
                " (SELECT count(*) FROM pg_namespace"
                "  WHERE has_schema_privilege(%(role)s, oid, 'CREATE')),"
                " (SELECT count(*) FROM pg_roles r WHERE r.rolname LIKE 'pg\\_%%'"
                "  AND r.rolname NOT IN ('pg_monitor', 'pg_read_all_stats',"
                "  'pg_read_all_settings', 'pg_stat_scan_tables')"
                "  AND pg_has_role(%(role)s, r.oid, 'MEMBER'))",
                {"role": role},
            ).fetchone()
            assert powers == (False, False, 0, 0)
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            conn.execute("SET default_transaction_read_only = off")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("CREATE TEMP TABLE t (x text)")
            conn.execute("RESET ROLE")
    finally:
        with psycopg.connect(graph_db, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# Privileges beyond reading, each granted by the loader (the owner of what it names) to the
# role, to a role it belongs to, or to PUBLIC; `why` is what the refusal must name.
WRITE_GRANTS = [
    pytest.param(
        "GRANT INSERT, UPDATE, TRUNCATE ON ALL TABLES IN SCHEMA registry_meta TO {grantee}",
        "INSERT on table registry_meta.generations",
        id="insert-registry_meta",
    ),
    pytest.param(
        "GRANT UPDATE, DELETE ON graph.origins TO {grantee}",
        "DELETE on table graph.origins",
        id="delete-graph",
    ),
    pytest.param(
        "GRANT UPDATE (name) ON graph.origins TO {grantee}",
        "UPDATE on column graph.origins.name",
        id="update-a-column",
    ),
    pytest.param(
        "GRANT TRIGGER, REFERENCES ON graph.networks TO {grantee}",
        "TRIGGER on table graph.networks",
        id="trigger",
    ),
    pytest.param(
        "GRANT USAGE ON SEQUENCE registry_meta.generation_seq TO {grantee}",
        "USAGE on sequence registry_meta.generation_seq",
        id="sequence-usage",
    ),
    pytest.param(
        "CREATE TABLE public.scratch (x int); ALTER TABLE public.scratch OWNER TO {grantee}",
        "INSERT on table public.scratch",
        id="owns-a-table-elsewhere",
    ),
    pytest.param(
        "ALTER DEFAULT PRIVILEGES GRANT INSERT ON TABLES TO {grantee}",
        "INSERT on tables created later",
        id="default-privileges",
    ),
    pytest.param(
        "CREATE FUNCTION public.bump() RETURNS bigint SECURITY DEFINER LANGUAGE sql"
        " AS $$SELECT nextval('registry_meta.generation_seq')$$;"
        " REVOKE EXECUTE ON FUNCTION public.bump() FROM PUBLIC;"
        " GRANT EXECUTE ON FUNCTION public.bump() TO {grantee}",
        "EXECUTE on function public.bump()",
        id="security-definer-function",
    ),
    pytest.param(
        "SELECT lo_create(424242); GRANT UPDATE ON LARGE OBJECT 424242 TO {grantee}",
        "UPDATE on large object 424242",
        id="large-object",
    ),
    pytest.param(
        "CREATE FOREIGN DATA WRAPPER registry_test_fdw;"
        " GRANT USAGE ON FOREIGN DATA WRAPPER registry_test_fdw TO {grantee}",
        "USAGE on foreign-data wrapper registry_test_fdw",
        id="foreign-data-wrapper",
    ),
    pytest.param(
        "CREATE FOREIGN DATA WRAPPER registry_test_fdw;"
        " CREATE SERVER registry_test_server FOREIGN DATA WRAPPER registry_test_fdw;"
        " GRANT USAGE ON FOREIGN SERVER registry_test_server TO {grantee}",
        "USAGE on foreign server registry_test_server",
        id="foreign-server",
    ),
    pytest.param(
        "GRANT SET ON PARAMETER log_statement TO {grantee}",
        "SET on parameter log_statement",
        id="parameter",
    ),
]


@pytest.mark.parametrize(("template", "why"), WRITE_GRANTS)
@pytest.mark.parametrize("through", ["directly", "through another role", "to PUBLIC"])
def test_a_role_with_a_privilege_beyond_select_is_refused(
    graph_db, new_role, template: str, why: str, through: str
):
    """The issue's case and its kin: a privilege beyond SELECT (and USAGE on schemas), on
    anything in the database, held directly, through membership or through PUBLIC, is
    refused with a line that names it; nothing changes."""
    role = new_role()
    grantee = sql.Identifier(role)
    with psycopg.connect(graph_db, autocommit=True) as conn:
        if through == "through another role":
            group = new_role()
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), grantee))
            grantee = sql.Identifier(group)
        elif through == "to PUBLIC":
            if "OWNER TO" in template:
                pytest.skip("PUBLIC owns nothing")
            grantee = sql.SQL("PUBLIC")
        for statement in template.split("; "):
            conn.execute(sql.SQL(statement).format(grantee=grantee))
    try:
        done = create_reader(graph_db, role)
        assert done.returncode == 1, done.stdout
        assert why in done.stderr and role in done.stderr, done.stderr
        assert "SELECT only" not in done.stdout
        assert role_settings(graph_db, role) == []
    finally:
        if through == "to PUBLIC" and "PARAMETER" in template:
            with psycopg.connect(graph_db, autocommit=True) as conn:
                conn.execute("REVOKE SET ON PARAMETER log_statement FROM PUBLIC")


def test_a_refused_writer_cannot_write_what_it_was_refused_for(graph_db, new_role):
    """The issue's probe, after the refusal: the role holds no more than it was given, and
    the command did not make it the reader (no read-only default, no registration)."""
    role = new_role()
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute(
            sql.SQL("GRANT UPDATE ON registry_meta.generations TO {}").format(sql.Identifier(role))
        )
    done = create_reader(graph_db, role)
    assert done.returncode == 1
    assert "UPDATE on table registry_meta.generations" in done.stderr
    with psycopg.connect(graph_db) as conn:
        registered = conn.execute(
            "SELECT count(*) FROM registry_meta.reader_roles WHERE role_name = %s", [role]
        ).fetchone()
    assert registered == (0,)


def registry_load(conninfo: str, path: Path) -> subprocess.CompletedProcess[str]:
    """Run `registry load PATH` as cron would."""
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", "load", str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": conninfo},
        timeout=120,
        check=False,
    )


def test_a_reader_dropped_outside_the_service_is_forgotten_by_the_next_load(
    graph_db, example_document: bytes, tmp_path: Path
):
    """An operator drops a registered reader role (DROP OWNED, DROP ROLE): the next load
    still commits, says so in a warning line, and forgets the role; the load after it is
    silent, and a reader that still exists keeps its grants."""
    gone, kept = (f"registry_test_reader_{uuid.uuid4().hex[:8]}" for _ in range(2))
    for role in (gone, kept):
        assert create_reader(graph_db, role).returncode == 0
    with psycopg.connect(graph_db, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(gone)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(gone)))
    path = tmp_path / "graph.jsonl"
    path.write_bytes(example_document)
    try:
        done = registry_load(graph_db, path)
        assert done.returncode == 0, done.stderr
        assert (
            f"registry load: warning: reader role {gone} no longer exists; forgotten" in done.stderr
        )
        assert kept not in done.stderr
        with psycopg.connect(graph_db) as conn:
            registered = conn.execute(
                "SELECT role_name FROM registry_meta.reader_roles ORDER BY role_name"
            ).fetchall()
            can_read = conn.execute(
                "SELECT has_table_privilege(%s, 'graph.origin_docs', 'SELECT')", [kept]
            ).fetchone()
        assert registered == [(kept,)]
        assert can_read == (True,)
        again = registry_load(graph_db, path)
        assert again.returncode == 0, again.stderr
        assert "warning" not in again.stderr
    finally:
        with psycopg.connect(graph_db, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(kept)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(kept)))


def _reads_the_kept_change_sets(conninfo: str, role: str) -> None:
    """As role: the net changes since generation 1 and the change log can be read."""
    from registry.database.changes import oldest_since
    from registry.database.changes_since import list_changes_since

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        stamp, page = list_changes_since(conn, {}, 1, 50, 0)
        page.check(stamp.generation)
        assert oldest_since(conn, stamp.generation) == 1
        assert conn.execute("SELECT count(*) FROM registry_meta.change_log").fetchone()


def test_the_reader_may_read_the_kept_change_sets(graph_db, new_role):
    """create-reader grants SELECT on the change log and net changes (docs/api.md, Changes since any
    generation), and so does migration 004 for a reader made before it."""
    from registry.database.migrations import apply_migrations
    from tests.loader.graphs import drop_change_log

    role = new_role()
    assert create_reader(graph_db, role).returncode == 0
    _reads_the_kept_change_sets(graph_db, role)
    with psycopg.connect(graph_db, autocommit=True) as conn:
        drop_change_log(conn)
        conn.execute("DELETE FROM registry_meta.schema_migrations WHERE version >= 4")
        assert apply_migrations(conn) == [
            "004_change_log",
            "005_net_change_ranges",
            "006_net_change_places",
            "007_net_change_lines_inlined",
            "008_change_log_in_line",
            "009_change_log_by_generation",
            "010_digests",
            "011_net_buckets",
        ]
    _reads_the_kept_change_sets(graph_db, role)
