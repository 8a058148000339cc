"""The bench's report: the table `make bench` prints, as docs/performance.md shows it."""

from __future__ import annotations

import argparse
import os
import platform
from datetime import UTC, datetime
from typing import Any

from devtools.bench_targets import CEILING_QUERY_LABEL

Row = tuple[str, int, dict[str, Any], dict[str, Any]]


def _ms(value: float | None) -> str:
    """A figure in milliseconds for the table, or - when there is none."""
    return "-" if value is None else f"{value:.2f}"


def print_report(
    args: argparse.Namespace,
    rows: list[Row],
    sweep: tuple[float, int] | None,
    exports: list[tuple[str, dict[str, Any]]],
    rss_before: list[float],
    rss_after: list[float],
) -> None:
    """Print the run's heading, its rows with their ratios, the sweep, exports and memory."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print()
    print(
        f"make bench ORIGINS={args.origins}  ({when}; {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}; wrk -t2 "
        f"-c{args.connections} -d{args.seconds}s)"
    )
    print()
    print("ratio: the URL's req/s over the ceiling's, measured just before it at the same")
    print("connections (a minimal Flask app answering a small JSON dict, same gunicorn.conf.py)")
    print()
    print("to +query: the ratio over the ceiling + one query row's at the same connections,")
    print(
        "the most an answer that reads the database can reach (every one does: docs/api.md,"
        " Generations and conditional requests)"
    )
    print()
    print("CPU ms/req: CPU time of the gunicorn workers (app) and of the PostgreSQL backends")
    print("serving them (db) per request answered, and the ceiling's app figure; CPU ratio:")
    print("the ceiling's CPU per request over the service's (app + db), which the machine's")
    print("load hardly moves")
    print()
    print(
        "| URL | conns | ratio | to +query | req/s | ceiling req/s | p50 ms | p99 ms "
        "| app CPU ms/req | db CPU ms/req | ceiling CPU ms/req | CPU ratio | errors |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    query_ratio = {
        connections: result["rps"] / ceiling["rps"]
        for label, connections, result, ceiling in rows
        if label == CEILING_QUERY_LABEL and ceiling["rps"]
    }
    for label, connections, result, ceiling_result in rows:
        ceiling_rps = ceiling_result["rps"]
        ratio = f"{result['rps'] / ceiling_rps:.2f}" if ceiling_rps else "-"
        over = query_ratio.get(connections)
        to_query = (
            f"{result['rps'] / ceiling_rps / over:.2f}"
            if over and ceiling_rps and label != CEILING_QUERY_LABEL
            else "-"
        )
        app, db, base = result.get("app_ms"), result.get("db_ms"), ceiling_result.get("app_ms")
        cpu_ratio = f"{base / (app + db):.2f}" if app and db is not None and base else "-"
        print(
            f"| {label} | {connections} | {ratio} | {to_query} | {result['rps']:.0f} "
            f"| {ceiling_rps:.0f} "
            f"| {_ms(result['p50'])} | {_ms(result['p99'])} | {_ms(app)} | {_ms(db)} "
            f"| {_ms(base)} | {cpu_ratio} | {result['errors'] or 'none'} |"
        )
    print()
    if sweep is not None:
        print(f"full sweep at limit=200: {sweep[1]} origins in {sweep[0]:.1f} s")
    print("| export | s | first byte ms | MB | MB/s | rows/s | worker peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, result in exports:
        seconds = result["seconds"]
        print(
            f"| {label} ({result['origins']} rows) | {seconds:.1f} | "
            f"{result['first_byte_ms']:.0f} | {result['mb']:.0f} | {result['mb'] / seconds:.0f} | "
            f"{result['origins'] / seconds:,.0f} | {result['peak_rss_mb']:.0f} |"
        )
    print()
    print(
        "worker RSS MB before: "
        + ", ".join(f"{v:.0f}" for v in rss_before)
        + "; after: "
        + ", ".join(f"{v:.0f}" for v in rss_after)
    )
