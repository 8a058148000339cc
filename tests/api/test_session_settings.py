"""Every pooled session of the API plans as a short, serial, read-only statement needs:
no parallel workers and no JIT (registry/database/conninfo.py session_options), whether the
settings travel as startup options (straight to PostgreSQL) or per request (PgBouncer)."""

from __future__ import annotations

import pytest

from registry.database.pool import Database
from registry.settings import load_settings

SETTINGS = ("jit", "max_parallel_workers_per_gather", "transaction_read_only")


@pytest.mark.parametrize("pgbouncer", [False, True], ids=["startup-options", "per-request"])
def test_a_pooled_session_has_no_jit_and_no_parallel_workers(
    example_db: str, pgbouncer: bool
) -> None:
    """jit off: the planner priced an export of changes since m above jit_above_cost at
    300,000 origins, and compiling its functions first took longer than running it."""
    settings = load_settings(
        {"DATABASE_URL": example_db, "REGISTRY_PGBOUNCER": "1" if pgbouncer else ""}
    )
    database = Database(settings)
    try:
        conn = database.getconn()
        try:
            values = [conn.execute(f"SHOW {name}").fetchone()[0] for name in SETTINGS]
        finally:
            database.putconn(conn)
    finally:
        database.close()
    assert dict(zip(SETTINGS, values, strict=True)) == {
        "jit": "off",
        "max_parallel_workers_per_gather": "0",
        "transaction_read_only": "on",
    }
