"""`make bench`: the service at scale, measured with wrk through the production gunicorn set-up.

python -m devtools.benchmark --origins 100000 [--only search,search-mix] [--connections 16,64]

Generates a demo graph of that size once (cached under .bench/), loads it into a database of
its own (skipped when that database already holds it), serves it with gunicorn.conf.py,
drives each URL with wrk (2 threads, 16 connections, 10 s), times a full sweep at limit=200,
and prints one table. Beside the service, a minimal Flask app (devtools/ceiling_app.py) runs
through the same gunicorn.conf.py; it is measured just before each row, and each row's rate
is reported as a ratio to it, which stays put while the shared machine's speed moves. The
search mix drives 200 distinct terms drawn from the graph's names and registry ids through
a wrk Lua script. The light rows run again while exports stream to 10 KB/s readers
(`--beside-exports`, devtools/slow_readers.py). It also times full exports (NDJSON and CSV,
straight to gunicorn and through deploy/nginx.conf) with the workers' peak memory meanwhile.
Nothing here asserts: it reports. `--exports-only` skips wrk and the sweep.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from devtools.bench_measure import (
    DatabaseCpu,
    app_cpu_seconds,
    current_etag,
    full_sweep,
    measure,
    run_exports,
    worker_rss_mb,
)
from devtools.bench_report import Row, print_report
from devtools.bench_targets import (
    MIX_ROWS,
    REVALIDATED,
    ROW_KEYS,
    pick_targets,
    prepare_database,
    search_terms,
    selected_keys,
    urls,
    write_mix_script,
)
from devtools.production_stack import start_gunicorn
from devtools.slow_readers import slow_exports
from registry.settings import load_settings
from registry.tokens.development import mint_token

REPO = Path(__file__).resolve().parent.parent
# The light rows measured again while exports stream to slow readers (docs/export.md, Capacity):
# pages must not wait behind exports.
BESIDE_EXPORTS = ("summary", "registry-summary", "first-page", "by-id")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(prog="python -m devtools.benchmark")
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--connections",
        default="16",
        help="wrk connections; a comma-separated list (16,64) runs every row at each",
    )
    parser.add_argument(
        "--only", help=f"rows to run, comma-separated (the ceiling always): {', '.join(ROW_KEYS)}"
    )
    parser.add_argument("--no-sweep", action="store_true", help="skip the full sweep")
    parser.add_argument(
        "--mix-warm-up",
        type=int,
        default=30,
        help="seconds of search mix before it is measured (each worker meets each term)",
    )
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    parser.add_argument("--exports-only", action="store_true", help="skip wrk and the sweep")
    parser.add_argument(
        "--beside-exports",
        type=int,
        default=2,
        help="measure the light rows again while this many exports stream to 10 KB/s readers "
        "(REGISTRY_MAX_EXPORTS of 5 workers: 2); 0: not",
    )
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None and not args.exports_only:
        print("make bench needs wrk (Debian package wrk)", file=sys.stderr)
        return 2
    keys = selected_keys(args.only)
    connection_counts = [int(c) for c in args.connections.split(",") if c.strip()]

    conninfo = prepare_database(args.origins, args.seed, Path(args.cache))
    targets = pick_targets(conninfo)
    singles = {key: (label, path) for key, label, path in urls(targets)}
    terms = search_terms(conninfo) if MIX_ROWS.keys() & set(keys) else []
    secret = secrets.token_urlsafe(48)
    settings = {
        **load_settings(),
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_JWT_ALGORITHMS": "HS256",
    }
    token = mint_token(settings, roles=["domain_admin"], ttl_seconds=7200, subject="bench")
    env = {
        "DATABASE_URL": conninfo,
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_GUNICORN_LOGLEVEL": "warning",
    }
    # Each row is measured right after a run of the ceiling at the same connections, and its
    # ratio is to that run: on a shared machine the rate moves by 2x within the hour, while
    # two runs a few seconds apart see the same machine.
    rows: list[Row] = []
    sweep: tuple[float, int] | None = None
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder)
        mix_scripts = {key: write_mix_script(logs, terms, key) for key in MIX_ROWS} if terms else {}
        ceiling = start_gunicorn(env, logs / "ceiling.log", app="devtools.ceiling_app:app")
        try:
            server = start_gunicorn(env, logs / "gunicorn.log")
        except BaseException:
            ceiling.stop()
            raise
        try:
            # CPU per request, measured beside each rate: the gunicorn workers' and, for the
            # service, its PostgreSQL backends'. Unlike req/s it hardly moves with the
            # machine's load, and it is what a capacity plan multiplies (docs/scaling.md).
            database = str(conninfo_to_dict(conninfo)["dbname"])
            ceiling_cpu: dict[str, Callable[[], float]] = {"app": lambda: app_cpu_seconds(ceiling)}
            service_cpu: dict[str, Callable[[], float]] = {
                "app": lambda: app_cpu_seconds(server),
                "db": DatabaseCpu(database),
            }
            rss_before = worker_rss_mb(server)
            if not args.exports_only:
                first = connection_counts[0]
                for connections in connection_counts:
                    for key in keys:
                        if key == "ceiling" or (key == "metrics" and connections != first):
                            continue
                        conns = 1 if key == "metrics" else connections
                        ceiling_result = measure(
                            ceiling.base + "/", token, args.seconds, conns, cpu=ceiling_cpu
                        )
                        if key in MIX_ROWS:
                            label = f"search mix ({len(terms)} terms)"
                            if MIX_ROWS[key]:
                                label += f", {MIX_ROWS[key]}"
                            result = measure(
                                server.base + "/registry/origins", token, args.seconds,
                                conns, mix_scripts[key], warm_up=args.mix_warm_up,
                                cpu=service_cpu,
                            )  # fmt: skip
                        elif key == "ceiling-query":
                            label, path = singles[key]
                            result = measure(
                                ceiling.base + path, token, args.seconds, conns,
                                cpu={**ceiling_cpu, "db": service_cpu["db"]},
                            )  # fmt: skip
                        else:
                            label, path = singles[key]
                            result = measure(
                                server.base + path, token, args.seconds, conns, cpu=service_cpu
                            )
                        rows.append((label, conns, result, ceiling_result))
                        print(
                            f"  {label:34} c={conns:<3} {result['rps']:9.1f} req/s "
                            f"(ceiling {ceiling_result['rps']:.0f})",
                            flush=True,
                        )
                        if key in BESIDE_EXPORTS and args.beside_exports:
                            with slow_exports(server.port, token, args.beside_exports) as got:
                                ceiling_result = measure(
                                    ceiling.base + "/", token, args.seconds, conns,
                                    cpu=ceiling_cpu,
                                )  # fmt: skip
                                beside = measure(
                                    server.base + singles[key][1], token, args.seconds, conns,
                                    cpu=service_cpu,
                                )  # fmt: skip
                            row = f"{label}, {got.count(200)} exports streaming"
                            rows.append((row, conns, beside, ceiling_result))
                            print(
                                f"  {row:34} c={conns:<3} {beside['rps']:9.1f} req/s "
                                f"(ceiling {ceiling_result['rps']:.0f})",
                                flush=True,
                            )
                        if label in REVALIDATED:
                            url = server.base + singles[key][1]
                            conditional = (f"If-None-Match: {current_etag(url, token)}",)
                            ceiling_result = measure(
                                ceiling.base + "/", token, args.seconds, conns, cpu=ceiling_cpu
                            )
                            revalidated = measure(
                                url, token, args.seconds, conns, headers=conditional,
                                cpu=service_cpu,
                            )  # fmt: skip
                            row = f"{label}: 304"
                            rows.append((row, conns, revalidated, ceiling_result))
                            print(
                                f"  {row:34} c={conns:<3} {revalidated['rps']:9.1f} req/s "
                                f"(ceiling {ceiling_result['rps']:.0f})",
                                flush=True,
                            )
                if not args.only and not args.no_sweep:
                    sweep = full_sweep(server.base, token)
            exports = run_exports(server, token, logs, targets["previous"])
            rss_after = worker_rss_mb(server)
        finally:
            server.stop()
            ceiling.stop()

    print_report(args, rows, sweep, exports, rss_before, rss_after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
