"""What carrying the session settings per request through PgBouncer costs (docs/scaling.md).

python -m devtools.session_cost [--requests 5000] [--database registry_bench_100000_1]

One process, one pooled connection, the same request (an origin by id) again and again, in
three ways: straight to PostgreSQL with the settings as startup options (the default); through
PgBouncer in transaction mode with REGISTRY_PGBOUNCER=1 (a read-only transaction per request
that sets them locally); and through the same PgBouncer with nothing set per request, which is
what settings kept on the role (ALTER ROLE ... SET) would cost. The PostgreSQL server is the
one of DATABASE_URL (TCP on 127.0.0.1); the database must hold a loaded graph (`make bench`
makes registry_bench_100000_1). Prints microseconds per request for each.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict

from devtools.cluster_parts import PgBouncer, service_user
from devtools.production_stack import free_port
from registry.database.conninfo import resolve_database_url, with_database
from registry.database.pool import Database
from registry.database.queries import QUERIES
from registry.database.repository import get_origin_by_id
from registry.settings import load_settings


def per_request_us(
    settings: dict[str, Any], origin_id: str, requests: int, per_request: bool = True
) -> float:
    """Median of five rounds: microseconds per request through one pooled connection."""
    database = Database(settings)
    # Off: no transaction per request, to measure the pooler's own cost alone.
    database._per_request_settings = per_request and bool(settings.get("REGISTRY_PGBOUNCER"))
    rounds = []
    try:
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(requests // 5):
                conn = database.getconn()
                try:
                    get_origin_by_id(conn, origin_id)
                finally:
                    database.putconn(conn)
            rounds.append((time.perf_counter() - started) / (requests // 5) * 1e6)
    finally:
        database.close()
    return statistics.median(rounds)


def main(argv: list[str] | None = None) -> int:
    """Measure the three ways and print them."""
    parser = argparse.ArgumentParser(prog="python -m devtools.session_cost")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--database", default="registry_bench_100000_1")
    args = parser.parse_args(argv)
    base = load_settings()
    direct = with_database(resolve_database_url(base), args.database)
    params = conninfo_to_dict(direct)
    if params.get("host") not in ("127.0.0.1", "localhost"):
        print("DATABASE_URL must name a server on 127.0.0.1 (TCP)", file=sys.stderr)
        return 2
    import psycopg

    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute(QUERIES["meta/pick_benchmark_targets"]).fetchone()
    assert row is not None
    origin_id = str(row[0]).rsplit(":", 1)[-1]
    folder = Path(tempfile.mkdtemp(prefix="registry-session-cost-"))
    folder.chmod(0o755)
    bouncer = PgBouncer(
        "pgbouncer", folder / "pgbouncer", free_port(), int(params.get("port") or 5432),
        service_user(),
    )  # fmt: skip
    try:
        bouncer.write_config()
        bouncer.start()
        user = params.get("user") or "postgres"
        pooled = f"postgresql://{user}@127.0.0.1:{bouncer.port}/{args.database}"
        ways = {
            "direct, settings as startup options": {**base, "DATABASE_URL": direct},
            "PgBouncer, settings per request (REGISTRY_PGBOUNCER=1)": {
                **base, "DATABASE_URL": pooled, "REGISTRY_PGBOUNCER": True,
            },
            "PgBouncer, nothing per request (settings on the role)": {
                **base, "DATABASE_URL": pooled, "REGISTRY_PGBOUNCER": True,
            },
        }  # fmt: skip
        for name, settings in ways.items():
            bare = name.endswith("(settings on the role)")
            figure = per_request_us(settings, origin_id, args.requests, per_request=not bare)
            print(f"{name}: {figure:.0f} us per request")
    finally:
        bouncer.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
