"""The bench's rows: the graph they run on, the URL each row drives and the search mix.

devtools.benchmark runs them; devtools.loadtest and devtools.cluster_faults drive the same
URLs through nginx (public_urls).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import psycopg
from psycopg import sql

from registry.database.conninfo import resolve_database_url, with_database
from registry.database.queries import QUERIES
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import GRAPH_FORMAT, LoadResult, load_counts_line, load_document
from registry.settings import load_settings


def _generated_once(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """path, written by write() the first time (through a .partial file, so an interrupted
    run leaves nothing that looks complete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as out:
            write(out)
        partial.rename(path)
    return path


def demo_document(origins: int, seed: int, cache: Path) -> Path:
    """The demo graph document of this size, generated once into the cache folder."""
    return _generated_once(
        cache / f"demo-{origins}-{seed}.jsonl",
        lambda out: write_demo_document(out, origins=origins, seed=seed),
    )


# The share of the demo's origins its twin changes (registry demo --changes): the bench graph
# is the demo (generation 1) and then its twin (generation 2), so the newest generation has a
# change set of this size for the /registry/changes rows (10,000 changes at 1,000,000).
TWIN_FRACTION = 0.01


def twin_document(origins: int, seed: int, cache: Path, fraction: float = TWIN_FRACTION) -> Path:
    """The demo's changed twin (registry demo --changes fraction), generated once."""
    return _generated_once(
        cache / f"twin-{origins}-{seed}-{fraction}.jsonl",
        lambda out: write_twin_document(out, origins=origins, seed=seed, fraction=fraction),
    )


def change_step_line(result: LoadResult) -> str:
    """What the change set cost a load: its step's seconds, and its share of the rest."""
    timings = result.timings
    step = timings.get("changes", 0.0) - timings.get("read_model", 0.0)
    rest = timings.get("total", result.elapsed_s) - step
    changes = result.changes.counts_line() if result.changes is not None else "no change set"
    share = 100 * step / rest if rest > 0 else 0.0
    return (
        f"  change set ({changes}): {step:.1f} s, +{share:.1f} % over the load's other {rest:.1f} s"
    )


def prepare_database(origins: int, seed: int, cache: Path) -> str:
    """A database holding the demo graph of this size (generation 1) and then its changed twin
    (generation 2); generated and loaded only once."""
    server = resolve_database_url(load_settings())
    # The load SQL's fingerprint in the name: branches with different read models can bench
    # on one server without reloading each other's graph.
    name = f"registry_bench_{origins}_{seed}_{GRAPH_FORMAT[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        exists = conn.execute(QUERIES["meta/database_exists"], {"name": name}).fetchone()
        if not (exists and exists[0]):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    conninfo = with_database(server, name)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        try:
            row = conn.execute(QUERIES["meta/get_graph_format"]).fetchone()
            loaded = row is not None and tuple(row) == (GRAPH_FORMAT, origins)
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
            loaded = False
        if not loaded:
            for path in (demo_document(origins, seed, cache), twin_document(origins, seed, cache)):
                print(f"loading {path.name} ...", flush=True)
                with open(path, "rb") as stream:
                    result = load_document(conn, stream)
                print(load_counts_line(result), flush=True)
                print(change_step_line(result), flush=True)
    return conninfo


def pick_targets(conninfo: str) -> dict[str, Any]:
    """Ids, an address and the largest network of the loaded graph, for the URLs."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(QUERIES["meta/pick_benchmark_targets"]).fetchone()
        ids = conn.execute(QUERIES["meta/pick_benchmark_ids"]).fetchone()
        changed = conn.execute(QUERIES["meta/pick_history_target"]).fetchone()
    assert row is not None and ids is not None
    origin_id, address, network_id, total, changes, previous = row
    # An origin with a history to tell; any origin when the newest load changed none.
    changed_id = changed[0] if changed is not None and changed[0] is not None else origin_id
    return {
        "ids": ids[0] or origin_id,
        "origin_id": origin_id,
        "address": address,
        "network_id": network_id,
        "total": total,
        "changes": changes,
        "previous": previous,
        "changed_id": changed_id,
    }


def urls(targets: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, label, path) of every single URL the benchmark drives."""
    last_page = max(1, -(-int(targets["total"]) // 200))
    changes_last = max(1, -(-int(targets["changes"]) // 50))
    bans = "kind=changed&block=bans"
    flags = "governance_state=governed&transport=ota"
    last = f"limit=200&page={last_page}"
    network = urllib.parse.quote(str(targets["network_id"]), safe="")
    facets = f"facet={EVERY_FACET}"
    origin = targets["origin_id"]
    return [
        ("summary", "/summary", "/summary"),
        ("ceiling-query", CEILING_QUERY_LABEL, "/query"),
        ("registry-summary", "/registry/summary", "/registry/summary"),
        ("first-page", "origins (first page, limit 50)", "/registry/origins"),
        ("limit-200", "origins limit=200", "/registry/origins?limit=200"),
        ("last-page", "origins last page, limit=200", f"/registry/origins?{last}"),
        ("flags", "governed + transport=ota", f"/registry/origins?{flags}"),
        ("search", "search=news", "/registry/origins?search=news"),
        ("network", "network_id=<largest>", f"/registry/origins?network_id={network}"),
        ("facets", "all 7 facets, no filter", f"/registry/origins?{facets}"),
        ("facets-flags", "all 7 facets, governed + allocated",
         f"/registry/origins?{facets}&{FACET_FLAGS}"),
        ("facets-network", "all 7 facets, network_id=<largest>",
         f"/registry/origins?{facets}&network_id={network}"),
        ("ids", "id= with 100 ids", f"/registry/origins?id={targets.get('ids', origin)}"),
        ("by-id", "origin by id", f"/registry/origins/{targets['origin_id']}"),
        ("by-address", "origin by address", f"/registry/addresses/{targets['address']}"),
        ("history", "history of a changed origin",
         f"/registry/origins/{targets['changed_id']}/history"),
        ("changes-first", "changes (first page, limit 50)", "/registry/changes"),
        ("changes-bans", f"changes {bans}", f"/registry/changes?{bans}"),
        ("changes-deep", "changes last page, limit=50", f"/registry/changes?page={changes_last}"),
        ("metrics", METRICS_LABEL, "/metrics"),
    ]  # fmt: skip


# Rows whose URL clients do not reach through nginx: the ceiling app's, and /metrics, which
# deploy/nginx.conf answers 404 (Prometheus scrapes gunicorn directly). `make bench` drives
# them where they are served; the load and fault tests through nginx leave them out.
NOT_THROUGH_NGINX = frozenset({"ceiling-query", "metrics"})


def public_urls(targets: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The URLs of urls() that clients reach through nginx: what load and fault tests drive."""
    return [row for row in urls(targets) if row[0] not in NOT_THROUGH_NGINX]


ROW_KEYS = (
    "ceiling", "ceiling-query", "summary", "registry-summary", "first-page", "limit-200",
    "last-page", "flags", "search", "search-mix", "network", "facets", "facets-flags",
    "facets-network", "facets-search-mix", "ids", "by-id", "by-address", "history",
    "changes-first", "changes-bans", "changes-deep", "metrics",
)  # fmt: skip
# Rows (docs/api.md, Facets and ids): every facet, alone and with two flag filters; the search mix
# with three facets (one of them ranked: a search's facets are counted, not read).
EVERY_FACET = (
    "governance_state,allocation_state,publication_status,transport,has_presentations,"
    "network_id,station_id"
)
FACET_FLAGS = "governance_state=governed&allocation_state=allocated"
MIX_FACETS = "facet=transport,publication_status,network_id"
# The rows that drive the search mix's script (the second with MIX_FACETS on every URL).
MIX_ROWS = {"search-mix": "", "facets-search-mix": MIX_FACETS}
# A scrape is one request at a time (Prometheus never overlaps its own): that row runs at one
# connection whatever --connections says, after every other row has filled the workers'
# metric files, and reads as the time one scrape takes with every worker's series in them.
METRICS_LABEL = "/metrics (one scraper)"
# The ceiling app answering after one round trip to PostgreSQL (the statement a 304 runs):
# the least any answer that asks the database once can cost, beside the ceiling itself.
CEILING_QUERY_LABEL = "ceiling + one query"
MIX_TERMS = 200
MIX_FREQUENT = 10
MIX_NOTHING = 20
MIX_REGISTRY_IDS = 50


def _spread(items: list[str], count: int) -> list[str]:
    """count items evenly spaced through items (the first and the last among them)."""
    if count <= 0 or not items:
        return []
    if count >= len(items):
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def search_terms(conninfo: str, count: int = MIX_TERMS) -> list[str]:
    """count distinct search terms from the graph's names and registry ids.

    The 10 most frequent name words, then words spread down to the rarest, registry ids
    spread from the most to the least shared, and terms that match nothing.
    """
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(QUERIES["meta/pick_search_terms"]).fetchall()
    words = [term for kind, term, _ in rows if kind == "word"]
    registry_ids = [term for kind, term, _ in rows if kind == "registry_id"]
    nothing = [f"zq{index:02d}xj" for index in range(MIX_NOTHING)]
    frequent = words[:MIX_FREQUENT]
    ids = _spread(registry_ids, MIX_REGISTRY_IDS)
    others = _spread(words[MIX_FREQUENT:], count - len(frequent) - len(ids) - len(nothing))
    terms = list(dict.fromkeys([*frequent, *others, *ids, *nothing]))
    spare = [t for t in registry_ids if t not in set(terms)]
    terms.extend(spare[: count - len(terms)])
    return terms[:count]


# wrk's script for the search mix: each connection walks the paths in turn from its own
# starting point, so every term is asked for about equally often.
MIX_SCRIPT = """
local paths = {PATHS}
local counter = 0
function init(args)
  counter = math.random(#paths)
end
function request()
  counter = counter % #paths + 1
  return wrk.format("GET", paths[counter])
end
"""


def write_mix_script(folder: Path, terms: list[str], key: str = "search-mix") -> Path:
    """The Lua script driving one search URL per term, in turn (with MIX_ROWS[key] added)."""
    extra = "&" + MIX_ROWS[key] if MIX_ROWS[key] else ""
    paths = [
        "/registry/origins?search=" + urllib.parse.quote(term, safe="") + extra for term in terms
    ]
    lua_paths = ", ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in paths)
    path = folder / f"{key}.lua"
    path.write_text(MIX_SCRIPT.replace("{PATHS}", "{" + lua_paths + "}"))
    return path


# Rows also driven with If-None-Match set to their current ETag: the 304 path (one tiny
# query, no listing or lookup), reported beside their 200 row.
REVALIDATED = ("origins (first page, limit 50)", "origin by id")


def selected_keys(only: str | None) -> list[str]:
    """The rows to run: all, or those --only names (the ceiling always)."""
    if not only:
        return list(ROW_KEYS)
    wanted = {key.strip() for key in only.split(",") if key.strip()}
    unknown = wanted - set(ROW_KEYS)
    if unknown:
        raise SystemExit(f"--only: unknown row(s) {sorted(unknown)}; rows: {', '.join(ROW_KEYS)}")
    return [key for key in ROW_KEYS if key == "ceiling" or key in wanted]
