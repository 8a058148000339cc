"""What keeping change sets costs and what `since=` answers at (docs/api.md, Changes since any
generation), in a scratch database of its own.

python -m devtools.bench_since --origins 100000 [--loads 10] [--back N] [--baseline REV]
    [--seconds 10]

A chain of loads, each by `registry load` in a process of its own: the demo, then `--loads`
twins of it, each with 1 % of the origins changed by draws of their own (the twin generator
of `registry demo --changes`, fractions 0.01, 0.0101, ...: each load undoes the twin before
it and applies its own, about 2 % of the origins). Reported:

- each load's time; with --baseline REV (a revision from before change sets were kept), the
  demo and the first twin loaded by that code in a database of its own, so the first twin's
  load with change sets kept is compared with today's load of the same twin in the same run;
- the storage of the kept change sets and net changes beside the kept graphs;
- with wrk at --connections (16) through the production gunicorn set-up: the first and the
  last page of since=<oldest since>, kind=changed&block=bans over the same range, and the
  first page without since (docs/api.md, Changes between generations) beside them; the history of
  the origin the chain changed most, beside that origin by id;
- the NDJSON export of since=<oldest>, against the export of the newest generation's own
  change set (docs/api.md, Changes between generations), per record;
- with --back N, the same pages and export of since=<the generation N loads back>, a since
  between the oldest and the newest (its net changes are no range of their own, unlike the
  oldest since's and the previous generation's).

Nothing asserts: it reports. The databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from devtools.bench_changes import REPO, load, scratch_database, worktree
from devtools.bench_measure import export_run, measure
from devtools.bench_targets import demo_document, twin_document
from devtools.production_stack import Gunicorn, start_gunicorn
from registry.database.conninfo import resolve_database_url
from registry.database.queries import QUERIES
from registry.settings import load_settings
from registry.tokens.development import mint_token

FIRST_TWIN = 0.01
BASE_EXPORT = "export NDJSON, the first twin's change set"
# Runs of each export, the fastest kept (a run is a fraction of a second).
EXPORT_RUNS = 5
STEP = 0.0001


def twin_fractions(loads: int) -> list[float]:
    """The twins' fractions: 1 % each, every one drawn differently."""
    return [round(FIRST_TWIN + index * STEP, 6) for index in range(loads)]


def main(argv: list[str] | None = None) -> int:
    """Load the chain, measure, print."""
    parser = argparse.ArgumentParser(prog="python -m devtools.bench_since")
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument(
        "--back", type=int, default=None, help="also since=<the generation N loads back>"
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--baseline", metavar="REV", help="a revision from before change sets")
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    demo = demo_document(args.origins, args.seed, cache)
    twins = [twin_document(args.origins, args.seed, cache, f) for f in twin_fractions(args.loads)]
    server = resolve_database_url(load_settings())
    baseline = None
    if args.baseline:
        print(f"baseline: the code of {args.baseline}, change sets not kept", flush=True)
        with (
            worktree(args.baseline) as tree,
            scratch_database(server, f"registry_bench_since_base_{args.origins}") as conninfo,
        ):
            load(tree, conninfo, demo)
            baseline, _ = load(tree, conninfo, twins[0])
            if shutil.which("wrk") is not None:
                # The /registry/changes export of that code ("the /registry/changes export today" of
                # issue 35), from gunicorn run from its own worktree, of the same twin's change set.
                with served(conninfo, tree) as (stack, token):
                    got = best_exports(stack, token, [(BASE_EXPORT, "/registry/changes")])
                report_exports(got, f" (the code of {args.baseline})")
    with scratch_database(server, f"registry_bench_since_{args.origins}") as conninfo:
        print(f"demo: {demo.name}", flush=True)
        load(REPO, conninfo, demo)
        times = []
        for number, path in enumerate(twins, start=1):
            print(f"twin {number} of {len(twins)}: {path.name}", flush=True)
            seconds, _ = load(REPO, conninfo, path)
            times.append(seconds)
        if baseline is not None:
            print(f"first twin over the demo: {times[0]:.1f} s with change sets kept, "
                  f"{baseline:.1f} s by {args.baseline} ({100 * (times[0] / baseline - 1):+.1f} %)",
                  flush=True)  # fmt: skip
        print(f"twin loads: {', '.join(f'{t:.1f}' for t in times)} s", flush=True)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            size = conn.execute(QUERIES["meta/get_kept_change_sets_size"]).fetchone()
            targets = conn.execute(QUERIES["meta/get_since_targets"]).fetchone()
            picked = conn.execute(QUERIES["meta/pick_history_chain_target"]).fetchone()
        assert size is not None and targets is not None
        kept, rows, log, net, graphs, kept_graphs = (int(n) for n in size)
        print(f"storage: {kept} change sets kept: change_log {log / 1e6:.1f} MB (rows "
              f"{rows / 1e6:.1f} MB), net changes {net / 1e6:.1f} MB; beside {kept_graphs} "
              f"graphs kept: {graphs / 1e6:.1f} MB", flush=True)  # fmt: skip
        generation, oldest, net_total, own = (int(n or 0) for n in targets)
        print(f"generation {generation}: oldest since {oldest}, {net_total} net changes "
              f"since then; its own change set {own}", flush=True)  # fmt: skip
        sinces = [(oldest, net_total)]
        if args.back is not None:
            back = generation - args.back
            with psycopg.connect(conninfo, autocommit=True) as conn:
                row = conn.execute(QUERIES["meta/get_net_count"], {"since": back}).fetchone()
            assert row is not None, f"since={back} is not kept"
            sinces.append((back, int(row[0])))
            print(f"since {back} ({args.back} loads back): {row[0]} net changes", flush=True)
        if shutil.which("wrk") is None:
            print("wrk is not installed: no request rows (Debian package wrk)", flush=True)
            return 0
        _serve_and_measure(args, conninfo, sinces, picked[0] if picked else None)
    return 0


def _serve_and_measure(
    args: argparse.Namespace, conninfo: str, sinces: list[tuple[int, int]], changed: str | None
) -> None:
    """The request rows and the exports, through the production gunicorn set-up; sinces:
    (since, its net changes), the oldest first; changed: the origin most often changed in
    the chain, whose history is asked for."""
    oldest = sinces[0][0]
    rows = [("changes (docs/api.md, Changes between generations), first page", "/registry/changes")]
    for since, total in sinces:
        last = max(1, -(-total // 50))
        rows += [
            (f"since={since}, first page", f"/registry/changes?since={since}"),
            (f"since={since}, last page ({last})", f"/registry/changes?since={since}&page={last}"),
        ]
    rows.append((f"since={oldest}&kind=changed&block=bans",
                 f"/registry/changes?since={oldest}&kind=changed&block=bans"))  # fmt: skip
    if changed is not None:
        rows += [
            ("the most changed origin, by id", f"/registry/origins/{changed}"),
            ("its history", f"/registry/origins/{changed}/history"),
        ]
    with served(conninfo) as (server, token):
        print(f"{'row':44} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}", flush=True)
        for label, path in rows:
            got = measure(server.base + path, token, args.seconds, args.connections)
            print(f"{label:44} {got['rps']:8.1f} {got['p50'] or 0:8.1f} "
                  f"{got['p99'] or 0:8.1f} {got['errors']}", flush=True)  # fmt: skip
        report_exports(best_exports(server, token, [
            ("export NDJSON, the newest change set", "/registry/changes"),
            *((f"export NDJSON, since={since}", f"/registry/changes?since={since}")
              for since, _ in sinces),
        ]))  # fmt: skip


@contextmanager
def served(conninfo: str, code: Path = REPO) -> Iterator[tuple[Gunicorn, str]]:
    """gunicorn over conninfo, the production set-up, from code; with an admin token."""
    secret = secrets.token_urlsafe(48)
    settings = {
        **load_settings(),
        "REGISTRY_JWT_SECRET": secret,
        "REGISTRY_JWT_ALGORITHMS": "HS256",
    }
    token = mint_token(settings, roles=["domain_admin"], ttl_seconds=7200, subject="bench")
    env = {"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": secret,
           "REGISTRY_GUNICORN_LOGLEVEL": "warning"}  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        server = start_gunicorn(env, Path(folder) / "gunicorn.log", code=code)
        try:
            yield server, token
        finally:
            server.stop()


def best_exports(
    server: Gunicorn, token: str, exports: list[tuple[str, str]]
) -> dict[str, dict[str, Any]]:
    """Each NDJSON export EXPORT_RUNS times, taking turns, the fastest run of each kept: one
    run of a fraction of a second moves with whatever else the machine does."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(EXPORT_RUNS):
        for label, path in exports:
            got = export_run(server.base + path, token, "application/x-ndjson", server)
            if label not in best or got["seconds"] < best[label]["seconds"]:
                best[label] = got
    return best


def report_exports(best: dict[str, dict[str, Any]], suffix: str = "") -> None:
    """Per line: the whole run, and from the first byte on (what each further record costs,
    without the request's fixed part)."""
    for label, got in best.items():
        lines = got["origins"] or 1
        per = 1e6 * got["seconds"] / lines
        streamed = 1e6 * (got["seconds"] - got["first_byte_ms"] / 1000) / lines
        print(f"{label + suffix:44} {got['origins']} lines, {got['mb']:.1f} MB in "
              f"{got['seconds']:.2f} s (first byte {got['first_byte_ms']:.0f} ms): "
              f"{per:.1f} us per line, {streamed:.1f} after the first byte "
              f"(best of {EXPORT_RUNS})", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
