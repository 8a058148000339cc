"""What this code's load of a twin costs against another revision's, taking turns.

python -m devtools.load_compare --baseline REV [--against REV2] [--origins 1000000] [--rounds 2]

Each round loads, for the baseline's code (a `git worktree` of REV) and then for this
checkout's (or, with --against, REV2's, in a worktree of its own: one change measured alone,
its commit against its parent), the demo and then its first twin (`make bench-since`'s
documents, cached in `.bench/`) into a fresh database of DATABASE_URL's server, each by
`registry load` in a process of its own, and prints the twin's load time and phases. A single
pair of loads moves with the machine by several per cent; rounds in turns put the two codes
in the same minutes.
Nothing asserts: it reports. The databases are dropped at the end (docs/performance.md).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

from devtools.bench_changes import REPO, load, scratch_database, worktree
from devtools.bench_targets import demo_document, twin_document
from registry.database.conninfo import resolve_database_url
from registry.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    """Load in turns, print each twin's load and the mean of each code's."""
    parser = argparse.ArgumentParser(prog="python -m devtools.load_compare")
    parser.add_argument("--baseline", metavar="REV", required=True)
    parser.add_argument("--origins", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", metavar="REV2", help="instead of this checkout")
    args = parser.parse_args(argv)
    cache = REPO / ".bench"
    demo = demo_document(args.origins, args.seed, cache)
    twin = twin_document(args.origins, args.seed, cache, 0.01)
    server = resolve_database_url(load_settings())
    ours_label = args.against or "this code"
    times: dict[str, list[float]] = {args.baseline: [], ours_label: []}
    with (
        worktree(args.baseline) as tree,
        worktree(args.against) if args.against else nullcontext(REPO) as ours,
    ):
        for number in range(1, args.rounds + 1):
            # In turns, and the other way round every second round (ABBA), so that a machine
            # growing busier or quieter through a run weighs on both codes alike.
            turns = [(args.baseline, tree), (ours_label, ours)]
            for label, code in turns if number % 2 else turns[::-1]:
                with scratch_database(server, f"registry_load_compare_{args.origins}") as url:
                    load(code, url, demo)
                    seconds, phases = load(code, url, twin)
                times[label].append(seconds)
                steps = ", ".join(f"{name} {value:.1f}" for name, value in phases.items())
                print(f"round {number}, {label}: the twin in {seconds:.1f} s ({steps})",
                      flush=True)  # fmt: skip
    base, mine = (sum(values) / len(values) for values in times.values())
    print(f"mean: {ours_label} {mine:.1f} s against {base:.1f} s by {args.baseline} "
          f"({100 * (mine / base - 1):+.1f} %)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
