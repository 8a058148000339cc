"""What one line of an export costs the database: the /registry/changes export of the newest change
set (and of its changed origins only) against the export since the oldest since (docs/api.md,
Changes since any generation), the statements alone (docs/performance.md).

python -m devtools.export_statements [--database NAME] [--rounds 7] [--column line|csv_line]

The server is the one of DATABASE_URL; the database must hold a chain of loads, such as the
demo and the twins `make bench-since` loads (`registry load` of its `.bench` documents, one by
one; the bench drops its own database at the end). Each round reads each export whole as the
service does (registry.database.exports): one REPEATABLE READ, READ ONLY transaction, a
server-side cursor, the lines as the bytes the server sent, 100 lines first and then 2,000 a
fetch, with JIT off as the service's sessions have it; the exports take turns. Prints
microseconds a line, best and median, and each one's ratio to the /registry/changes export.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg
from psycopg import sql

from registry.database.conninfo import resolve_database_url, with_database
from registry.database.exports import _RawText
from registry.database.queries import QUERIES
from registry.settings import load_settings

FIRST = 100
FETCH = 2000


def per_line_us(conn: psycopg.Connection, statement: str, params: dict[str, object]) -> float:
    """Microseconds a line to read statement's rows whole through a server-side cursor."""
    started = time.perf_counter()
    conn.execute(QUERIES["exports/begin_export"])
    cursor = conn.cursor("export_statements")
    cursor.adapters.register_loader("text", _RawText)
    cursor.execute(statement, params)
    lines = len(cursor.fetchmany(FIRST))
    while rows := cursor.fetchmany(FETCH):
        lines += len(rows)
    conn.rollback()
    cursor.close()
    elapsed = time.perf_counter() - started
    return elapsed / max(lines, 1) * 1e6


def main(argv: list[str] | None = None) -> int:
    """Measure both exports in turns, print."""
    parser = argparse.ArgumentParser(prog="python -m devtools.export_statements")
    parser.add_argument("--database", help="a database of DATABASE_URL's server")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--column", choices=["line", "csv_line"], default="line")
    args = parser.parse_args(argv)
    url = resolve_database_url(load_settings())
    if args.database:
        url = with_database(url, args.database)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET jit = off")
        row = conn.execute(
            "SELECT i.generation, registry_meta.oldest_since(i.generation) FROM graph.graph_info i"
        ).fetchone()
        assert row is not None, "no graph loaded"
        generation, oldest = int(row[0]), int(row[1])

        def statement(name: str) -> str:
            query = sql.SQL(QUERIES[name]).format(
                graph=sql.Identifier("graph"), column=sql.Identifier(args.column)
            )
            return query.as_string(conn)

        exports: dict[str, tuple[str, dict[str, object]]] = {
            "/registry/changes, the newest change set": (statement("changes/export_changes"), {}),
            "/registry/changes, its changed origins": (
                statement("changes/export_changes_by_kind"),
                {"kind": "changed"},
            ),
            f"since={oldest}": (statement("changes/export_net_changes"), {"since": oldest}),
        }
        times: dict[str, list[float]] = {name: [] for name in exports}
        lines = {
            name: len(conn.execute(query, params).fetchall())
            for name, (query, params) in exports.items()
        }
        for _ in range(args.rounds):
            for name, (query, params) in exports.items():
                times[name].append(per_line_us(conn, query, params))
    print(f"generation {generation}, oldest since {oldest}, column {args.column}")
    base = min(next(iter(times.values())))
    for name, values in times.items():
        print(f"  {name}, {lines[name]} lines: best {min(values):.1f} us a line, median "
              f"{statistics.median(values):.1f}; best x{min(values) / base:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
