"""What this code's load of a twin costs against another revision's, taking turns.

python -m devtools.load_compare --baseline REV [--against REV2] [--patch FILE]
    [--upgrade] [--origins 1000000] [--rounds 2]

Each code gets a database of its own on DATABASE_URL's server, and the demo loaded into it
(`make bench-since`'s documents, cached in `.bench/`). Then each round loads into both, in
turns, the demo's first twin in odd rounds and the demo again in even ones: every measured
load is a whole graph of which about 1 % changed since the one before. The codes are the
baseline's (a `git worktree` of REV, with --patch FILE applied to it by `git apply`: one
piece of this code taken out, say) and this checkout's (or, with --against, REV2's, in a
worktree of its own: one change measured alone, its commit against its parent). With
--upgrade the baseline's code loads the demo into both databases, so the first round
measures this code's first load after an upgrade from the baseline. Each load is
`registry load` in a process of its own; it prints the load's time, phases and the CPU time
of the loader and its render workers (the database server's is not in it). A single pair of
loads moves with the machine by several per cent; rounds in turns put the two codes in the
same minutes, and the order turns round every two rounds (so each document is loaded
in both orders; rounds in a multiple of 4 give each order as many rounds). The load run first
in a round was measured slower, whichever code: the last line weighs the two orders alike.
Nothing asserts: it reports. The databases are dropped at the end (docs/performance.md).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from contextlib import ExitStack, nullcontext
from pathlib import Path

from devtools.bench_changes import REPO, load, scratch_database, worktree
from devtools.bench_targets import demo_document, twin_document
from registry.database.conninfo import resolve_database_url
from registry.settings import load_settings


def timed_load(code: Path, url: str, document: Path) -> tuple[float, float, dict[str, float]]:
    """A load's time, the CPU time of the loader and its workers, and its phases."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds, phases = load(code, url, document)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, phases


def main(argv: list[str] | None = None) -> int:
    """Load in turns, print each twin's load and the mean of each code's."""
    parser = argparse.ArgumentParser(prog="python -m devtools.load_compare")
    parser.add_argument("--baseline", metavar="REV", required=True)
    parser.add_argument("--origins", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", metavar="REV2", help="instead of this checkout")
    parser.add_argument("--patch", metavar="FILE", help="applied to the baseline's worktree")
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="the demo loaded into both databases by the baseline's code",
    )
    args = parser.parse_args(argv)
    cache = REPO / ".bench"
    demo = demo_document(args.origins, args.seed, cache)
    twin = twin_document(args.origins, args.seed, cache, 0.01)
    server = resolve_database_url(load_settings())
    ours_label = args.against or "this code"
    base_label = f"{args.baseline} with {Path(args.patch).name}" if args.patch else args.baseline
    times: dict[str, list[float]] = {base_label: [], ours_label: []}
    cpus: dict[str, list[float]] = {base_label: [], ours_label: []}
    with ExitStack() as stack:
        tree = stack.enter_context(worktree(args.baseline))
        if args.patch:
            patch = str(Path(args.patch).resolve())
            subprocess.run(["git", "apply", patch], cwd=tree, check=True)
        ours = stack.enter_context(worktree(args.against) if args.against else nullcontext(REPO))
        codes = {base_label: tree, ours_label: ours}
        urls = {}
        for number, label in enumerate(codes):
            name = f"registry_load_compare_{args.origins}_{number}"
            urls[label] = stack.enter_context(scratch_database(server, name))
            load(tree if args.upgrade else codes[label], urls[label], demo)
        for number in range(1, args.rounds + 1):
            document = twin if number % 2 else demo
            # AB, AB, BA, BA, ...: each document loaded in both orders, and a machine growing
            # busier or quieter through a run weighs on both codes alike.
            order = list(codes) if (number + 1) // 2 % 2 else list(codes)[::-1]
            for label in order:
                seconds, cpu, phases = timed_load(codes[label], urls[label], document)
                times[label].append(seconds)
                cpus[label].append(cpu)
                steps = ", ".join(f"{name} {value:.1f}" for name, value in phases.items())
                print(f"round {number}, {label}: {document.name} in {seconds:.1f} s, "
                      f"{cpu:.1f} s CPU ({steps})", flush=True)  # fmt: skip
    base, mine = statistics.fmean(times[base_label]), statistics.fmean(times[ours_label])
    base_cpu, mine_cpu = statistics.fmean(cpus[base_label]), statistics.fmean(cpus[ours_label])
    print(f"mean: {ours_label} {mine:.1f} s against {base:.1f} s by {base_label} "
          f"({100 * (mine / base - 1):+.1f} %); CPU {mine_cpu:.1f} s against {base_cpu:.1f} s "
          f"({100 * (mine_cpu / base_cpu - 1):+.1f} %)")  # fmt: skip
    for label in codes:
        listed = ", ".join(f"{value:.1f}" for value in times[label])
        print(f"  {label}: {listed}")
    # The load run first in a round was measured slower than the second, whichever code it
    # was (about 5 % at a million origins): the ratio of each round, averaged over the rounds
    # of each order, and the two orders weighed alike.
    by_order: dict[str, list[float]] = {base_label: [], ours_label: []}
    for number in range(args.rounds):
        first = base_label if (number + 2) // 2 % 2 else ours_label
        by_order[first].append(times[ours_label][number] / times[base_label][number])
    if all(by_order.values()):
        means = {first: statistics.fmean(ratios) for first, ratios in by_order.items()}
        each = ", ".join(f"{first} first {100 * (m - 1):+.1f} %" for first, m in means.items())
        print(f"per round, by order: {each}; the two alike: "
              f"{100 * (statistics.fmean(list(means.values())) - 1):+.1f} %")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
