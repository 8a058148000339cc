"""The cluster's fault report (part of `make faulttest`): one part fails at a time under load.

python -m devtools.cluster_faults [--origins N] [--seconds 30] [--fault-at 8] [--down 10]

Starts the loopback cluster of devtools.cluster with the demo graph of N origins, then, for
each scenario, drives wrk through nginx at the public URLs of `make bench` (mixed, with an
admin token) for --seconds, injects the fault --fault-at seconds in, and undoes it --down
seconds later (where there is something to undo). Per scenario it prints the requests sent,
the failed ones by status (a 503 with the documented JSON body and Retry-After apart from
any other), socket errors, and the time from the fault to the end of the last failed answer
(to 100 ms): after it, every request succeeded. A scenario passes when every failure is
the JSON 503.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from devtools.bench_targets import demo_document, pick_targets, public_urls
from devtools.cluster import Cluster, start_cluster
from devtools.cluster_parts import pgbouncer_binary
from devtools.loadtest import WrkResult, parse_wrk, write_script, wrk_command
from devtools.production_stack import PREFIX, REPO, nginx_binary


@dataclass
class Scenario:
    """A fault: what breaks, what repairs it (None: nothing to repair), and for how long."""

    name: str
    inject: Callable[[Cluster], None]
    repair: Callable[[Cluster], None] | None
    # Seconds between fault and repair, when not --down.
    down_s: float | None = None


def _restart_standby_bouncer(cluster: Cluster) -> None:
    """Restart the PgBouncer in front of the standby (where the reads go)."""
    cluster.standby_bouncer.restart()


def _restart_app(cluster: Cluster) -> None:
    """Start the killed app instance again, on its port."""
    cluster.start_app(0)


# Loads started by a scenario, waited for when it ends.
_BACKGROUND_LOADS: list[subprocess.Popen] = []


def _pause_replay(cluster: Cluster) -> None:
    """Pause replay on the standby, then load a new graph on the primary (in the background:
    its WAL reaches the standby and waits there, so the standby falls behind)."""
    with cluster.standby.connect() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    _BACKGROUND_LOADS.append(
        subprocess.Popen(
            [sys.executable, "-m", "registry.cli", "load", str(cluster.document)],
            cwd=REPO,
            env={**os.environ, "DATABASE_URL": cluster.write_url},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )


def _resume_replay(cluster: Cluster) -> None:
    """Resume replay; the load goes on to its end."""
    with cluster.standby.connect() as conn:
        conn.execute("SELECT pg_wal_replay_resume()")


SCENARIOS = [
    Scenario("standby stopped", lambda c: c.standby.stop(), lambda c: c.standby.start()),
    Scenario("primary stopped", lambda c: c.primary.stop(), lambda c: c.primary.start()),
    Scenario("one app host killed", lambda c: c.kill_app(0), _restart_app),
    Scenario("PgBouncer restarted", _restart_standby_bouncer, None),
    # The lag limit is 10 s (REGISTRY_MAX_REPLICA_LAG_S): paused for 20 s, it is passed.
    Scenario("replay paused beyond the lag limit", _pause_replay, _resume_replay, down_s=20.0),
]


@dataclass
class Outcome:
    """What one scenario saw."""

    scenario: str
    result: WrkResult
    injected_at: float
    repaired_at: float | None
    note: str = ""

    @property
    def failed(self) -> int:
        """Answers that were not 200, and socket errors."""
        return (
            self.result.count("unavailable")
            + self.result.count("other")
            + sum(self.result.socket_errors.values())
        )

    @property
    def passed(self) -> bool:
        """Every failure was the documented JSON 503."""
        return not self.result.count("other") and not sum(self.result.socket_errors.values())

    def recovery_s(self) -> float:
        """From the fault to the end of the last failed answer (full recovery); 0 if none."""
        window = self.result.failure_window()
        if window is None:
            return 0.0
        return max(0.0, window[1] - self.injected_at)

    def row(self) -> str:
        """One line of the report's table."""
        unavailable = self.result.count("unavailable")
        others = dict(self.result.statuses("other"))
        sockets = sum(self.result.socket_errors.values())
        return (
            f"| {self.scenario} | {self.result.requests} | {self.failed} | {unavailable} | "
            f"{others or 0} | {sockets} | {self.recovery_s():.1f} s | "
            f"{'PASS' if self.passed else 'FAIL'} | {self.note} |"
        )


def origin_rows(cluster: Cluster) -> int:
    """How many origins the standby serves (to show a failed load changed nothing)."""
    with cluster.standby.connect() as conn:
        row = conn.execute("SELECT count(*) FROM graph.origin_rows").fetchone()
    assert row is not None
    return int(row[0])


def run_scenario(
    cluster: Cluster, scenario: Scenario, script: Path, args: argparse.Namespace, document: Path
) -> Outcome:
    """wrk through nginx for args.seconds with the fault in the middle."""
    assert cluster.nginx is not None
    url = cluster.nginx.root + "/"
    load = subprocess.Popen(
        wrk_command(url, script, args.seconds, args.connections, args.threads),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(args.fault_at)
    injected_at = time.time()
    scenario.inject(cluster)
    note = ""
    if scenario.name == "primary stopped":
        before = origin_rows(cluster)
        loaded = cluster.load(document)
        first = (loaded.stderr.strip().splitlines() or [""])[0]
        unchanged = origin_rows(cluster) == before
        note = f"load meanwhile: exit {loaded.returncode}, '{first}'; graph unchanged: {unchanged}"
    repaired_at = None
    if scenario.repair is not None:
        down = scenario.down_s if scenario.down_s is not None else args.down
        time.sleep(max(0.0, down - (time.time() - injected_at)))
        repaired_at = time.time()
        scenario.repair(cluster)
    output, _ = load.communicate(timeout=args.seconds + 120)
    while _BACKGROUND_LOADS:
        note = f"load during the pause: exit {_BACKGROUND_LOADS.pop().wait(timeout=1800)}"
    cluster.wait_for_replay(seconds=300)
    return Outcome(scenario.name, parse_wrk(output), injected_at, repaired_at, note)


def main(argv: list[str] | None = None) -> int:
    """Start the cluster, run every scenario, print the report; exit 0 when all pass."""
    parser = argparse.ArgumentParser(prog="python -m devtools.cluster_faults")
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=35)
    parser.add_argument("--fault-at", type=float, default=8.0)
    parser.add_argument("--down", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", default=str(REPO / ".bench"))
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None or nginx_binary() is None or pgbouncer_binary() is None:
        print("the cluster fault report needs wrk, nginx and pgbouncer", file=sys.stderr)
        return 2
    if args.fault_at + max(args.down, 20) + 5 > args.seconds:
        parser.error("--fault-at + --down (20 for the replay pause) + 5 must fit in --seconds")
    document = demo_document(args.origins, args.seed, Path(args.cache))
    folder = Path(tempfile.mkdtemp(prefix="registry-cluster-faults-"))
    outcomes: list[Outcome] = []
    try:
        print("starting the cluster ...", flush=True)
        cluster = start_cluster(folder, document)
        try:
            targets = pick_targets(cluster.primary.url)
            paths = [PREFIX + path for _, _, path in public_urls(targets)]
            script = write_script(folder, paths, cluster.token())
            assert cluster.nginx is not None
            url = cluster.nginx.root + "/"
            subprocess.run(wrk_command(url, script, 5, args.connections, args.threads),
                           capture_output=True, check=True)  # fmt: skip
            for scenario in SCENARIOS:
                print(f"scenario: {scenario.name} ...", flush=True)
                outcomes.append(run_scenario(cluster, scenario, script, args, document))
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print()
    print(
        f"cluster fault report ({when}; {args.origins} origins; per scenario wrk -t{args.threads} "
        f"-c{args.connections} -d{args.seconds}s through nginx, fault at {args.fault_at:.0f} s, "
        f"repaired {args.down:.0f} s later)"
    )
    print(
        "| scenario | requests | failed | of them JSON 503 | other statuses | socket errors "
        "| failures ended after the fault | verdict | note |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---|---|")
    for outcome in outcomes:
        print(outcome.row())
    return 0 if all(outcome.passed for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
