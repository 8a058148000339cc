"""The schema in one place: migrations change tables and data, and registry_meta's functions
are the repeatable definitions of sql/definitions, applied after the migrations by every
upgrade and every load (registry.database.definitions, registry.database.migrations).

A database at an earlier schema version is made as the releases made it: each migration file
as its release shipped it (tests/fixtures/released_migrations, frozen; the functions that
migrations 004 to 007 defined are still in them), applied in order and recorded, to an empty
database. The releases' Python steps (digests, empty change sets) have nothing to do in a
database without graphs. Upgraded by this code, it must dump, schema only, as a database this
code made fresh, dumped by the pg_dump of the server's own version.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from registry.database.definitions import definition_files
from registry.database.embedded import server_bin_dir
from registry.database.migrations import SCHEMA_VERSION, apply_migrations, migration_files
from registry.database.queries import QUERIES
from registry.loader.loading import load_document

from .graphs import BASE, RELEASED_MIGRATIONS, document

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "sql" / "migrations"
DEFINITIONS = ROOT / "sql" / "definitions"
# What defines a function, procedure, view or the like, or changes one (ALTER FUNCTION ...
# STABLE), wherever it stands in a file (in the text of a DO block's EXECUTE too).
DEFINES = re.compile(
    r"\b(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?(?:RECURSIVE\s+)?"
    r"(?:FUNCTION|PROCEDURE|VIEW|AGGREGATE|TRIGGER|RULE)"
    r"|ALTER\s+(?:FUNCTION|PROCEDURE|VIEW|AGGREGATE|ROUTINE))\b",
    re.IGNORECASE,
)
COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
CREATES = re.compile(
    r"CREATE\s+OR\s+REPLACE\s+FUNCTION\s+registry_meta\.(\w+)\s*\(|CREATE\s+(?!OR\s)", re.I
)


def without_comments(text: str) -> str:
    """The SQL text with its comments cut out (a comment may name what it does not do)."""
    return COMMENT.sub("", text)


def test_no_migration_defines_a_function_or_a_view() -> None:
    """Every migration file, and every step of one that runs after the definitions, changes
    tables and data only."""
    files = sorted(MIGRATIONS.rglob("*.sql"))
    assert len(files) > SCHEMA_VERSION
    found = {
        str(file.relative_to(ROOT)): DEFINES.findall(without_comments(file.read_text()))
        for file in files
    }
    assert {name: what for name, what in found.items() if what} == {}


def test_each_definition_is_one_function_named_as_its_file() -> None:
    """sql/definitions: one CREATE OR REPLACE FUNCTION registry_meta.<file name> a file,
    nothing else created."""
    files = sorted(DEFINITIONS.glob("*.sql"))
    assert files
    for file in files:
        created = CREATES.findall(without_comments(file.read_text()))
        assert created == [file.stem], f"{file.name} creates {created}"


def test_each_definition_is_applied_after_those_it_calls() -> None:
    """build_net_changes calls oldest_since, so it comes after it, whatever their names."""
    order = [name for name, _ in definition_files()]
    assert sorted(order) == sorted(path.stem for path in DEFINITIONS.glob("*.sql"))
    for place, (name, text) in enumerate(definition_files()):
        called = set(re.findall(r"registry_meta\.(\w+)\s*\(", text)) - {name}
        assert called & set(order) <= set(order[:place]), f"{name} before {called}"
    assert order.index("oldest_since") < order.index("build_net_changes")


def test_the_oldest_since_is_written_once() -> None:
    """Its formula (the newest generation whose change set was dropped) is in one file of sql/,
    registry_meta.oldest_since_row's: every statement and function that needs the oldest since
    reads that one (the migrations as released are history, and frozen)."""
    formula = re.compile(r"changes_dropped_at\s+IS\s+NOT\s+NULL", re.IGNORECASE)
    files = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "sql").rglob("*.sql"))
        if formula.search(without_comments(path.read_text()))
    ]
    assert files == ["sql/definitions/oldest_since_row.sql"]


def test_every_step_after_the_definitions_belongs_to_a_migration() -> None:
    """A file of sql/migrations/after_definitions is named as the migration it completes."""
    steps = sorted(path.stem for path in (MIGRATIONS / "after_definitions").glob("*.sql"))
    assert steps and set(steps) <= {name for _, name, _ in migration_files()}


def released_texts() -> dict[int, tuple[str, str]]:
    """version -> (name, SQL) of each migration as its release shipped it: the frozen copy,
    or the file itself for a migration released since the copies were made."""
    texts = {version: (name, text) for version, name, text in migration_files()}
    frozen = {}
    for path in sorted(RELEASED_MIGRATIONS.glob("*.sql")):
        frozen[int(path.name[:3])] = (path.stem, path.read_text(encoding="utf-8"))
    assert frozen and set(frozen) <= set(texts)
    assert all(frozen[v][0] == texts[v][0] for v in frozen), "a frozen copy is misnamed"
    return {**texts, **frozen}


def at_version(conninfo: str, version: int) -> None:
    """Bring an empty database to schema version `version` as the releases did."""
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute(QUERIES["meta/create_migrations_table"])
        for number, (name, text) in sorted(released_texts().items()):
            if number > version:
                break
            conn.execute(text)
            conn.execute(QUERIES["meta/record_migration"], {"version": number, "name": name})


def pg_dump_program(conn: psycopg.Connection) -> str:
    """The pg_dump of the server's major version, found beside the server's programs: the
    embedded server's, those pg_config names, or the one on PATH."""
    major = conn.info.server_version // 10000
    candidates = [server_bin_dir() / "pg_dump"]
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False, timeout=30
        )
        if found.returncode == 0 and found.stdout.strip():
            candidates.append(Path(found.stdout.strip()) / "pg_dump")
    on_path = shutil.which("pg_dump")
    if on_path:
        candidates.append(Path(on_path))
    for program in candidates:
        if not program.is_file():
            continue
        said = subprocess.run(
            [str(program), "--version"], capture_output=True, text=True, check=False, timeout=30
        ).stdout
        number = re.search(r"\b(\d+)\.\d+", said)
        if number and int(number.group(1)) == major:
            return str(program)
    pytest.fail(f"no pg_dump of PostgreSQL {major} among {[str(c) for c in candidates]}")


def schema_dump(conninfo: str) -> str:
    """The database's schema as pg_dump writes it, less the random key of its \\restrict
    lines (pg_dump 15.14, 16.10, 17.6 and later)."""
    with psycopg.connect(conninfo) as conn:
        program = pg_dump_program(conn)
    dumped = subprocess.run(
        [program, "--schema-only", "--dbname", conninfo],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    lines = [
        line for line in dumped.splitlines() if not line.startswith(("\\restrict", "\\unrestrict"))
    ]
    assert any("registry_meta.build_net_changes" in line for line in lines)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def fresh_dump(database_factory: Callable[[], str]) -> str:
    """The schema of a database this code upgraded from nothing."""
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        apply_migrations(conn)
    return schema_dump(conninfo)


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_a_database_upgraded_from_each_earlier_version_equals_a_fresh_one(
    database_factory: Callable[[], str], fresh_dump: str, version: int
) -> None:
    conninfo = database_factory()
    at_version(conninfo, version)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        applied = apply_migrations(conn)
    assert applied == [name for v, name, _ in migration_files() if v > version]
    assert schema_dump(conninfo) == fresh_dump


def function_definitions(conn: psycopg.Connection) -> dict[str, str]:
    """Every function of registry_meta: its signature -> its definition as the server has it."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc AS p"
        " WHERE p.pronamespace = 'registry_meta'::regnamespace"
    ).fetchall()
    return dict(rows)


def test_every_upgrade_and_load_applies_the_definitions(
    database_factory: Callable[[], str],
) -> None:
    """A definition changed in the database (by hand, or by older code of the same schema
    version) is the file's again after `registry db upgrade` with nothing to migrate, and after
    a load, which applies the definitions before it begins."""
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        apply_migrations(conn)
        defined = function_definitions(conn)
        assert len(defined) == len(definition_files())
        for replace in (lambda: apply_migrations(conn), lambda: load(conn)):
            conn.execute(
                "ALTER FUNCTION registry_meta.net_change_json(uuid, text, text[], text, text)"
                " IMMUTABLE"
            )
            conn.execute(
                "CREATE OR REPLACE FUNCTION registry_meta.oldest_since(n bigint) RETURNS bigint"
                " LANGUAGE sql STABLE AS 'SELECT 42::bigint'"
            )
            assert function_definitions(conn) != defined
            replace()
            assert function_definitions(conn) == defined


def load(conn: psycopg.Connection) -> None:
    """Load the base document on conn."""
    load_document(conn, io.BytesIO(document(BASE)))
