"""The request-time queries keep their indexes: EXPLAIN at 40,000 origins, not a timing.

Each test runs a repository function for real, takes the one statement and the parameters it
sent, and EXPLAINs exactly that on a connection set up like the service's. A sequential scan
of a big table fails the test, so a lost index or a rewritten query is caught before a
benchmark (or production) notices it.

The statements of /registry/changes?since=m (docs/api.md, Changes since any generation) are held to
the same, at the end of the module, on the same database once three twins of its graph are loaded
over it: writing and loading a document of the graph costs about 18 s, and the graph is loaded once
for both.

Why 40,000 origins: big enough that every growing table spans hundreds of pages (a sequential
scan of one is never the cheap plan by accident), small enough to load four times in each of
CI's two runs. A smaller graph makes a sequential scan or a sort relatively cheaper, not
dearer (a page of 50 reads the same few index pages at any size; reading a table whole costs
in proportion to it), so a plan that keeps its indexes here keeps them on a larger graph.
It was 100,000 before: the same 117 plans pass on PostgreSQL 15 and 18 alike, in half
the set-up time (74 s against 148 s on PostgreSQL 15).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
import pytest

from registry.database import exports, facets, history, repository
from registry.database.changes import change_statement, filter_path
from registry.database.changes_since import _EXPORT, _LIST, list_changes_since
from registry.database.conninfo import connection_kwargs
from registry.database.generations import graph_statement
from registry.database.queries import QUERIES
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import LoadOptions, load_document
from registry.settings import load_settings
from schemas.params import FACET_NAMES, parse_origin_list_query
from tests.recording import RecordingConnection

HISTORY = "origins/get_origin_history"
ORIGINS = 40_000
SEED = 7

# Tables whose rows grow with the graph (per origin, edge, allocation or carriage): a
# sequential scan of any of them costs time in proportion to the graph, on every request.
BIG_TABLES = frozenset(
    {
        "origins",
        "origin_rows",
        "origin_docs",
        "origin_csv",
        "origin_search",
        "carriages",
        "governance_edges",
        "allocations",
    }
)
# The only tables a plan may read with a sequential scan. Each is built at load time and stays
# small however many origins there are, so reading it whole costs less than an index would:
# - combo_counts: one row per flag combination present (at most 256; 64 in the demo graph);
# - block_combo_counts: one row per block of 4096 positions and combination present (391 at
#   40,000 origins); the flag listing sums it to find the block a deep page starts in;
# - station_combo_counts: one row per station and combination; stations are few (about 60
#   in the demo graph, 1,496 rows at 40,000 origins), whatever the number of origins;
# - facet_keys: one row per combination of flag filter values (405), whatever the graph;
# - registry_summary, feed, graph_info: one row each.
# network_combo_counts is left out on purpose: it has a row per network and combination
# (21,214 at 40,000 origins), so it grows with the graph; the network listing reads it
# through network_combo_counts_idx.
# Any other table (networks, say) fails too: a new scan should be a decision, not an accident.
SMALL_TABLES = frozenset(
    {
        "combo_counts",
        "block_combo_counts",
        "station_combo_counts",
        "facet_keys",
        "registry_summary",
        "feed",
        "graph_info",
    }
)
# Selected with the other database tests (-m db), the coverage check included.
pytestmark = pytest.mark.db

HAS_TRIGRAMS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_trgm')"


@dataclass(frozen=True)
class PlanGraph:
    """The loaded demo graph, a service-like connection to it, and values worth asking for."""

    conninfo: str
    conn: RecordingConnection
    has_trigrams: bool
    targets: dict[str, str]


def load_settled(loader: psycopg.Connection[Any], document: Any) -> None:
    """Load document, as `registry load` does, until its read model is all-visible.

    The plans below are the read model's as it serves: all-visible (registry.loader.visibility).
    One VACUUM right after the commit is not always that: a snapshot older than the commit in
    the same database (autovacuum analysing a table of the load before, on a busy machine)
    leaves pages, and with them the planner's estimate of an index-only scan, and it picked a
    sequential scan of net_changes in a full run. `registry load` waits for such snapshots
    (REGISTRY_LOAD_VACUUM_WAIT_S, then a detached `registry db vacuum`); so does this load.
    """
    result = load_document(loader, document, options=LoadOptions(vacuum_wait_s=300.0))
    settled = result.read_model
    assert settled is not None and settled.complete, settled and settled.line()


@pytest.fixture(scope="module")
def plan_graph(database_factory: Callable[[], str]) -> Iterator[PlanGraph]:
    """A fresh database holding the 40,000-origin demo graph, loaded once for the module."""
    conninfo = database_factory()
    with tempfile.TemporaryFile() as document:
        write_demo_document(document, ORIGINS, SEED)
        document.seek(0)
        with psycopg.connect(conninfo, autocommit=True) as loader:
            load_settled(loader, document)
    # The service's own session settings (autocommit, read-only, statement timeout), so the
    # planner sees what it sees in production.
    kwargs = connection_kwargs(load_settings(), conninfo)
    with RecordingConnection.connect(conninfo, **kwargs) as conn:
        conn.ran = []
        has_trigrams = bool(conn.execute(HAS_TRIGRAMS).fetchone()[0])
        yield PlanGraph(conninfo, conn, has_trigrams, _targets(conn))


def _targets(conn: RecordingConnection) -> dict[str, str]:
    """An origin from the middle, an address held, the largest network and stations in use."""
    row = conn.execute(QUERIES["meta/pick_benchmark_targets"]).fetchone()
    origin_id, address, network_id = row[0], row[1], row[2]
    # A station that the largest network's origins actually hold, for network+station.
    _, page = repository.list_origins(conn, {"network_id": network_id}, 200, 0)
    held = [record["bans"] for record in orjson.loads(page.records)]
    network_station = next(bans["station"] for bans in held if bans["allocated"])
    return {
        "origin_uuid": origin_id.removeprefix("svc:origin:"),
        "address": address,
        "network_id": network_id,
        "station": address.split(".")[1],
        "network_station": str(network_station),
    }


def statement_of(conn: RecordingConnection, call: Callable[[], Any]) -> tuple[str, Any]:
    """The one statement, with its parameters, that call sent on conn."""
    conn.ran.clear()
    call()
    assert len(conn.ran) == 1, f"expected one statement, ran {len(conn.ran)}"
    return conn.ran[0]


def explain(conn: psycopg.Connection[Any], query: str, params: Any) -> dict[str, Any]:
    """The root node of the plan PostgreSQL picks for query with these parameters."""
    row = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
    assert row is not None
    return row[0][0]["Plan"]


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of the plan tree, init plans and sub plans included."""
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


def seq_scanned(plan: dict[str, Any]) -> set[str]:
    """The tables the plan reads with a sequential scan (parallel ones included)."""
    return {node["Relation Name"] for node in nodes(plan) if node["Node Type"] == "Seq Scan"}


def outline(plan: dict[str, Any], depth: int = 0) -> str:
    """The plan as indented lines (node, table, index, estimated rows), for failure messages."""
    parts = [plan["Node Type"]]
    if "Relation Name" in plan:
        parts.append(f"on {plan['Relation Name']}")
    if "Index Name" in plan:
        parts.append(f"using {plan['Index Name']}")
    for key in ("Index Cond", "Filter", "Recheck Cond"):
        if key in plan:
            parts.append(f"[{key}: {plan[key]}]")
    parts.append(f"rows={plan['Plan Rows']}")
    lines = ["  " * depth + " ".join(parts)]
    lines.extend(outline(child, depth + 1) for child in plan.get("Plans", ()))
    return "\n".join(lines)


def assert_no_big_seq_scan(
    plan: dict[str, Any], query_name: str, params: Any, tolerated: frozenset[str] = frozenset()
) -> None:
    """Fail, showing query, parameters and plan, on a seq scan of a table not small or tolerated."""
    scanned = seq_scanned(plan)
    message = f"{query_name} seq-scans {sorted(scanned)} with {params!r}:\n{outline(plan)}"
    assert scanned & BIG_TABLES <= tolerated, message
    assert scanned <= SMALL_TABLES | tolerated, message


def listing_statement(graph: PlanGraph, args: dict[str, str], last: bool) -> tuple[str, Any]:
    """The statement list_origins sends for these query-string arguments (first or last page)."""
    given = {name: [value.format(**graph.targets)] for name, value in args.items()}
    filters = parse_origin_list_query(given)
    page, limit = filters.pop("page"), filters.pop("limit")
    # The page and offset arithmetic of GET /registry/origins.
    offset = (page - 1) * limit
    total = repository.list_origins(graph.conn, filters, limit, offset)[1].total
    if last:
        offset = (max(1, -(-total // limit)) - 1) * limit
    # A search's later pages come from its remembered matches (test_remembered_search_page):
    # forget them, so this is the statement a first request sends.
    repository.SEARCHES.clear()
    return statement_of(
        graph.conn, lambda: repository.list_origins(graph.conn, filters, limit, offset)
    )


FLAG_VALUES = {
    "governance_state": ("governed", "ungoverned"),
    "allocation_state": ("allocated", "unallocated"),
    "publication_status": ("published", "held"),
    "transport": ("iptv", "ovp", "ota", "fast"),
    "has_presentations": ("true", "false"),
}
# The parsed values (has_presentations a boolean), in FLAG_VALUES order.
FLAG_CHOICES = (
    ("governed", "ungoverned"),
    ("allocated", "unallocated"),
    ("published", "held"),
    ("iptv", "ovp", "ota", "fast"),
    (True, False),
)
ALL, FLAGS = "origins/list_all_origins", "origins/list_origins_by_flags"
NETWORK, STATION = "origins/list_origins_by_network", "origins/list_origins_by_station"
NETWORK_AND_STATION = "origins/list_origins_by_network_and_station"
SEARCH = "origins/search_origins"
BY_POSITIONS = "origins/get_origins_by_positions"
BY_IDS, EXPORT_BY_IDS = "origins/list_origins_by_ids", "origins/export_origins_by_ids"
# Values in braces are filled from the loaded graph (PlanGraph.targets).
LISTINGS = [
    pytest.param({}, False, ALL, id="all-first-page"),
    pytest.param({}, True, ALL, id="all-last-page"),
    *(
        pytest.param({name: value}, False, FLAGS, id=f"{name}={value}")
        for name, values in FLAG_VALUES.items()
        for value in values
    ),
    # The demo graph has no OTA carriage: a combination that matches nothing.
    pytest.param(
        {"governance_state": "governed", "transport": "ota"}, False, FLAGS, id="governed+ota"
    ),
    pytest.param(
        {"allocation_state": "allocated", "has_presentations": "true"},
        False,
        FLAGS,
        id="allocated+has_presentations",
    ),
    pytest.param(
        {"allocation_state": "allocated", "has_presentations": "true"},
        True,
        FLAGS,
        id="allocated+has_presentations-last-page",
    ),
    pytest.param({"governance_state": "ungoverned"}, True, FLAGS, id="ungoverned-last-page"),
    pytest.param({"network_id": "{network_id}"}, False, NETWORK, id="largest-network"),
    pytest.param({"network_id": "{network_id}"}, True, NETWORK, id="largest-network-last-page"),
    pytest.param(
        {"network_id": "{network_id}", "transport": "iptv"},
        False,
        NETWORK,
        id="largest-network+iptv",
    ),
    pytest.param({"station_id": "{station}"}, False, STATION, id="station"),
    pytest.param({"station_id": "{station}"}, True, STATION, id="station-last-page"),
    pytest.param(
        {"network_id": "{network_id}", "station_id": "{network_station}"},
        False,
        NETWORK_AND_STATION,
        id="network+station",
    ),
    pytest.param(
        {"station_id": "{station}", "governance_state": "governed"},
        False,
        STATION,
        id="station+governed",
    ),
]


@pytest.mark.parametrize(("args", "last", "query_name"), LISTINGS)
def test_listing_uses_indexes(
    plan_graph: PlanGraph, args: dict[str, str], last: bool, query_name: str
) -> None:
    """Each listing path runs its own file and scans no big table, first page or last."""
    query, params = listing_statement(plan_graph, args, last)
    assert query == graph_statement(query_name)
    assert_no_big_seq_scan(explain(plan_graph.conn, query, params), query_name, params)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"search": "news"}, id="news"),
        pytest.param({"search": "News", "governance_state": "governed"}, id="news+governed"),
        pytest.param({"search": "news", "network_id": "{network_id}"}, id="news+network"),
    ],
)
def test_search_uses_trigram_indexes(plan_graph: PlanGraph, args: dict[str, str]) -> None:
    """Search scans no big table where pg_trgm is installed; without it, only origin_search."""
    query, params = listing_statement(plan_graph, args, last=False)
    assert query == graph_statement(SEARCH)
    plan = explain(plan_graph.conn, query, params)
    if plan_graph.has_trigrams:
        assert_no_big_seq_scan(plan, SEARCH, params)
    else:
        # Without trigram indexes the LIKE has nothing to use: one pass over the narrow
        # origin_search is the documented cost (search_origins.sql), and nothing more.
        assert_no_big_seq_scan(plan, SEARCH, params, tolerated=frozenset({"origin_search"}))


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"search": "news"}, id="news"),
        pytest.param({"search": "news", "network_id": "{network_id}"}, id="news+network"),
    ],
)
def test_remembered_search_page_reads_records_by_position(
    plan_graph: PlanGraph, args: dict[str, str]
) -> None:
    """A search already run in this generation fetches its page by primary key, no scan."""
    given = {name: [value.format(**plan_graph.targets)] for name, value in args.items()}
    filters = parse_origin_list_query(given)
    filters.pop("page"), filters.pop("limit")
    repository.SEARCHES.clear()
    first = repository.list_origins(plan_graph.conn, filters, 50, 0)
    query, params = statement_of(
        plan_graph.conn, lambda: repository.list_origins(plan_graph.conn, filters, 50, 50)
    )
    assert query == graph_statement(BY_POSITIONS)
    assert first[1].total == repository.list_origins(plan_graph.conn, filters, 50, 50)[1].total
    assert_no_big_seq_scan(explain(plan_graph.conn, query, params), BY_POSITIONS, params)


EXPORT_PATHS = {
    "origins/export_all_origins": {},
    "origins/export_origins_by_flags": {"governance_state": "governed"},
    "origins/export_origins_by_network": {"network_id": "{network_id}"},
    "origins/export_origins_by_station": {"station_id": "{station}"},
    "origins/export_search_origins": {"search": "news"},
}
# Each path twice: the stored records (NDJSON) and the stored CSV rows.
EXPORTS = {
    **{name: (args, False) for name, args in EXPORT_PATHS.items()},
    **{f"{name}_as_csv": (args, True) for name, args in EXPORT_PATHS.items()},
}
EXPORT_SETUP = {
    "exports/begin_export",
    "exports/set_export_settings",
    "exports/get_export_stamp",
    "origins/origin_csv_exists",
}


@pytest.mark.parametrize(("query_name", "case"), EXPORTS.items(), ids=list(EXPORTS))
def test_an_export_streams_in_listing_order_without_sorting(
    plan_graph: PlanGraph, query_name: str, case: tuple[dict[str, str], bool]
) -> None:
    """Each export path is its file, read by a cursor in position order: no sort of the graph."""
    args, csv_rows = case
    given = {name: [value.format(**plan_graph.targets)] for name, value in args.items()}
    filters = parse_origin_list_query(given)
    filters.pop("page"), filters.pop("limit")
    name, params = exports._export_query(filters, csv_rows)
    assert name == query_name
    # A cursor is planned for its first rows (cursor_tuple_fraction), as the export runs it.
    plan = explain(
        plan_graph.conn, "DECLARE plan_check CURSOR FOR " + graph_statement(name), params
    )
    assert not [node for node in nodes(plan) if node["Node Type"] == "Sort"], outline(plan)


LOOKUPS = [
    pytest.param(
        "origins/get_origin_by_id",
        lambda conn, t: repository.get_origin_by_id(conn, t["origin_uuid"]),
        id="origin-by-id",
    ),
    pytest.param(
        "origins/get_origin_by_address",
        lambda conn, t: repository.get_origin_by_address(
            conn, *(int(part) for part in t["address"].split("."))
        ),
        id="origin-by-address",
    ),
    pytest.param(
        "summary/get_registry_summary",
        lambda conn, t: repository.get_registry_summary(conn),
        id="registry-summary",
    ),
    pytest.param(
        "summary/get_integration_status",
        lambda conn, t: repository.get_integration_status(conn),
        id="integration-status",
    ),
]


@pytest.mark.parametrize(("query_name", "call"), LOOKUPS)
def test_lookup_and_summary_use_indexes(
    plan_graph: PlanGraph, query_name: str, call: Callable[[Any, dict[str, str]], Any]
) -> None:
    """Lookups by id and address and both summaries run their own file and scan no big table."""
    conn = plan_graph.conn
    query, params = statement_of(conn, lambda: call(conn, plan_graph.targets))
    assert query == graph_statement(query_name)
    assert_no_big_seq_scan(explain(conn, query, params), query_name, params)


def test_an_origins_history_reads_the_change_log_by_id(plan_graph: PlanGraph) -> None:
    """The history (docs/api.md, An origin's history) probes the change log by origin id, and the
    graph by id; only the list of generations (a row per generation, never per origin) may be read
    whole."""
    conn = plan_graph.conn
    origin_uuid = plan_graph.targets["origin_uuid"]
    query, params = statement_of(conn, lambda: history.get_origin_history(conn, origin_uuid))
    assert query == graph_statement(HISTORY)
    plan = explain(conn, query, params)
    assert_no_big_seq_scan(plan, HISTORY, params, tolerated=frozenset({"generations"}))
    probes = [node for node in nodes(plan) if node.get("Relation Name") == "change_log"]
    assert probes, outline(plan)
    probed = {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}
    assert all(node["Node Type"] in probed for node in probes), outline(plan)


def test_every_request_time_query_is_covered() -> None:
    """Each file under sql/origins and sql/summary is EXPLAINed above, and sql/exports holds
    only an export's BEGIN, its settings and its one-row stamp."""
    covered = {ALL, FLAGS, NETWORK, NETWORK_AND_STATION, STATION, SEARCH, BY_POSITIONS, *EXPORTS}
    covered |= EXPORT_SETUP
    covered |= {BY_IDS, EXPORT_BY_IDS, EXPORT_BY_IDS + "_as_csv", *FACET_SETUP}
    covered |= {
        FACETS_OF_ALL,
        FACETS_BY_FLAGS,
        FACETS_OF_NETWORK,
        FACETS_OF_NETWORK_NARROWED,
        FACETS_OF_STATION,
        FACETS_BY_STATION,
        FACETS_OF_SEARCH,
        FACETS_OF_SEARCH_ROWS,
        FACETS_OF_ROWS,
    }
    covered |= {param.values[0] for param in LOOKUPS}
    covered.add(HISTORY)
    files = {
        f"{folder}/{name}"
        for folder in ("origins", "summary", "exports")
        for name, _ in QUERIES.folder(folder)
    }
    assert files == covered


# docs/api.md, Facets and ids. Facets: every access path, each facet asked for, with the network and
# station facets ranked (the largest network's and the largest station's listings included).
FACETS_OF_ALL, FACETS_BY_FLAGS = "origins/count_facets_of_all", "origins/count_facets_by_flags"
FACETS_OF_NETWORK = "origins/count_facets_of_network"
FACETS_OF_NETWORK_NARROWED = "origins/count_facets_of_network_narrowed"
FACETS_OF_STATION = "origins/count_facets_of_station"
FACETS_BY_STATION = "origins/count_facets_by_station"
FACETS_OF_SEARCH = "origins/count_facets_of_search"
FACETS_OF_SEARCH_ROWS = "origins/count_facets_of_search_rows"
FACETS_OF_ROWS = "origins/count_facets_of_rows"
FACET_SETUP = {"origins/facet_counts_exist"}
EVERY_FACET = ",".join(FACET_NAMES)
FACET_LISTINGS = [
    pytest.param({}, FACETS_OF_ALL, id="all"),
    pytest.param({"governance_state": "governed"}, FACETS_BY_FLAGS, id="governed"),
    pytest.param({"has_presentations": "false"}, FACETS_BY_FLAGS, id="no-presentations"),
    pytest.param(
        {"governance_state": "governed", "allocation_state": "allocated"},
        FACETS_BY_FLAGS,
        id="governed+allocated",
    ),
    pytest.param({"network_id": "{network_id}"}, FACETS_OF_NETWORK, id="largest-network"),
    pytest.param(
        {"network_id": "{network_id}", "governance_state": "governed"},
        FACETS_OF_NETWORK_NARROWED,
        id="largest-network+governed",
    ),
    pytest.param(
        {"network_id": "{network_id}", "station_id": "{network_station}", "transport": "iptv"},
        FACETS_OF_NETWORK_NARROWED,
        id="network+station+iptv",
    ),
    pytest.param({"station_id": "{station}"}, FACETS_OF_STATION, id="station"),
    pytest.param(
        {"station_id": "{station}", "governance_state": "ungoverned"},
        FACETS_BY_STATION,
        id="station+ungoverned",
    ),
    pytest.param({"id": "{ids}"}, FACETS_OF_ROWS, id="100-ids"),
    pytest.param(
        {"id": "{ids}", "search": "news", "governance_state": "governed"},
        FACETS_OF_ROWS,
        id="100-ids+search+governed",
    ),
]


def _hundred_ids(graph: PlanGraph) -> str:
    """100 origin ids from across the graph, as a comma-separated id value."""
    _, page = repository.list_origins(graph.conn, {}, 200, 20_000)
    records = orjson.loads(page.records)
    return ",".join(record["origin"]["id"] for record in records[::2])


def _filters(graph: PlanGraph, args: dict[str, str]) -> dict[str, Any]:
    """The parsed filters of these query-string arguments, targets filled in."""
    targets = {**graph.targets, "ids": _hundred_ids(graph)}
    given = {name: [value.format(**targets)] for name, value in args.items()}
    filters = parse_origin_list_query(given)
    filters.pop("page"), filters.pop("limit")
    return filters


def facet_statement_sent(graph: PlanGraph, filters: dict[str, Any], size: int) -> tuple[str, Any]:
    """The statement count_facets sends for every facet (the counts' presence known)."""
    stamp = repository.list_origins(graph.conn, {}, 1, 0)[0]
    names = list(FACET_NAMES)
    facets.count_facets(graph.conn, filters, names, size, stamp)
    # A search's facets are then remembered: forget them, so this is what a first page sends.
    facets._SEARCH_FACETS.clear()
    return statement_of(
        graph.conn,
        lambda: facets.count_facets(graph.conn, filters, names, size, stamp),
    )


@pytest.mark.parametrize(("args", "query_name"), FACET_LISTINGS)
def test_facets_read_counts_not_rows(
    plan_graph: PlanGraph, args: dict[str, str], query_name: str
) -> None:
    """Each facet path runs its own file and scans no big table, facet_size at its largest."""
    query, params = facet_statement_sent(plan_graph, _filters(plan_graph, args), 100)
    assert query == graph_statement(query_name)
    assert_no_big_seq_scan(explain(plan_graph.conn, query, params), query_name, params)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"search": "news"}, id="news"),
        pytest.param({"search": "news", "network_id": "{network_id}"}, id="news+network"),
    ],
)
def test_facets_of_a_search_count_its_matches_by_index(
    plan_graph: PlanGraph, args: dict[str, str]
) -> None:
    """A search's facets find its matches as the search does and group them there: the
    network, station and combination are origin_search's own, so no match is looked up in
    origin_rows (tens of thousands of lookups for a frequent term at 1,000,000 origins). A
    graph loaded before origin_search kept them looks each match up by position instead."""
    query, params = facet_statement_sent(plan_graph, _filters(plan_graph, args), 10)
    assert query == graph_statement(FACETS_OF_SEARCH)
    plan = explain(plan_graph.conn, query, params)
    tolerated = frozenset() if plan_graph.has_trigrams else frozenset({"origin_search"})
    assert_no_big_seq_scan(plan, FACETS_OF_SEARCH, params, tolerated)
    read = {node.get("Relation Name") for node in nodes(plan)}
    assert "origin_search" in read and "origin_rows" not in read, outline(plan)
    if plan_graph.has_trigrams:
        scans = [node for node in nodes(plan) if node.get("Relation Name") == "origin_search"]
        assert {node["Node Type"] for node in scans} == {"Bitmap Heap Scan"}, outline(plan)
    older = graph_statement(FACETS_OF_SEARCH_ROWS)
    plan = explain(plan_graph.conn, older, params)
    assert_no_big_seq_scan(plan, FACETS_OF_SEARCH_ROWS, params, tolerated)
    probes = [node for node in nodes(plan) if node.get("Relation Name") == "origin_rows"]
    assert probes and all("Index" in node["Node Type"] for node in probes), outline(plan)


def test_the_facet_counts_check_reads_no_table(plan_graph: PlanGraph) -> None:
    """Whether a generation has the facet counts: graph_info and the catalog, once."""
    query = graph_statement("origins/facet_counts_exist")
    plan = explain(plan_graph.conn, query, {"schema": "graph"})
    assert_no_big_seq_scan(plan, "origins/facet_counts_exist", None)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"id": "{ids}"}, id="100-ids"),
        pytest.param({"id": "{ids}", "search": "news", "transport": "iptv"}, id="ids+search"),
    ],
)
def test_ids_are_found_by_the_id_key(plan_graph: PlanGraph, args: dict[str, str]) -> None:
    """A listing by ids, last page too, and its exports probe origin_rows_id_key: no scan."""
    filters = _filters(plan_graph, args)
    query, params = statement_of(
        plan_graph.conn, lambda: repository.list_origins(plan_graph.conn, filters, 50, 50)
    )
    assert query == graph_statement(BY_IDS)
    assert_no_big_seq_scan(explain(plan_graph.conn, query, params), BY_IDS, params)
    for csv_rows in (False, True):
        name, params = exports._export_query(filters, csv_rows)
        assert name == EXPORT_BY_IDS + ("_as_csv" if csv_rows else "")
        # At most 100 rows: the one sort an export may have.
        plan = explain(plan_graph.conn, graph_statement(name), params)
        assert_no_big_seq_scan(plan, name, params)


def test_the_load_ranks_networks_under_the_services_flag_keys(plan_graph: PlanGraph) -> None:
    """network_facet_tops is keyed as the service asks it: for every combination of flag
    filter values, the load's key and flag combinations are facets.flag_key's and
    repository.matching_combos' (a filter whose bits moved in one place only fails here)."""
    stored = dict(plan_graph.conn.execute("SELECT key, combos FROM graph.facet_keys").fetchall())
    expected = {}
    for values in itertools.product(*(((None, *choices)) for choices in FLAG_CHOICES)):
        filters = {
            name: value
            for name, value in zip(FLAG_VALUES, values, strict=True)
            if value is not None
        }
        combos = repository.matching_combos(filters)
        expected[facets.flag_key(filters)] = list(range(256)) if combos is None else combos
    assert stored == expected


# docs/api.md, Changes since any generation. Changes since any kept generation, after a chain of
# loads of 1 % twins. The net changes and the change log grow with the changes kept: neither may be
# read by a sequential scan, first page or last, filtered or not, nor may an export sort its
# records. Since the oldest since and since the previous generation (the sinces consumers ask most),
# a page or an export reads, by EXPLAIN ANALYZE, only the net changes that answer for it: a range of
# an index, not a walk of all of the generation's rows.

# Tables that grow with the changes kept: never read whole by a request.
CHANGE_TABLES = frozenset({"change_log", "net_changes"})
# registry_meta.generations has one row per load ever committed; graph_info one row;
# net_counts one per kept graph and kept since (at most REGISTRY_KEEP_GENERATIONS x
# (REGISTRY_KEEP_CHANGES + 1) rows), whatever the graph or the changes.
SMALL = frozenset({"generations", "graph_info", "net_counts"})
# Three loads over the demo graph: twins of it with 1 % of the origins changed (different
# draws, each undoing the one before), so generation 4 has net changes since 1 (its oldest
# since), 2 and 3 (its previous), and rows for each that the others do not answer with.
TWINS = (0.01, 0.0101, 0.0102)
NEWEST, OLDEST, PREVIOUS = 4, 1, 3


@pytest.fixture(scope="module")
def chain(plan_graph: PlanGraph) -> Iterator[RecordingConnection]:
    """The plan graph's database with TWINS loaded over it (after the tests above: file order)."""
    with psycopg.connect(plan_graph.conninfo, autocommit=True) as loader:
        for fraction in TWINS:
            with tempfile.TemporaryFile() as document:
                write_twin_document(document, ORIGINS, SEED, fraction)
                document.seek(0)
                load_settled(loader, document)
    kwargs = connection_kwargs(load_settings(), plan_graph.conninfo)
    with RecordingConnection.connect(plan_graph.conninfo, **kwargs) as conn:
        conn.ran = []
        yield conn


# The parameters of a since export's statement read in one batch, from the first origin id
# (registry.database.exports.KeysetRows reads it batch by batch).
WHOLE_EXPORT = {
    "from": "00000000-0000-0000-0000-000000000000",
    "batch": 2**31 - 1,
    "generation": NEWEST,
    "oldest": OLDEST,
}

CASES = {
    "all": {},
    "kind": {"kind": "changed"},
    "block": {"block": "bans"},
}


@pytest.mark.parametrize("since", [OLDEST, 2, PREVIOUS])
@pytest.mark.parametrize("last", [False, True], ids=["first-page", "last-page"])
@pytest.mark.parametrize("path", list(CASES))
def test_a_page_since_m_reads_indexes(
    chain: RecordingConnection, path: str, last: bool, since: int
) -> None:
    """Each changes-since listing path scans neither graph nor changes, first page or last."""
    filters: dict[str, Any] = CASES[path]
    stamp, page = list_changes_since(chain, filters, since, 50, 0)
    assert stamp.generation == NEWEST and page.total > 0
    offset = (max(1, -(-page.total // 50)) - 1) * 50 if last else 0
    query, params = statement_of(
        chain, lambda: list_changes_since(chain, filters, since, 50, offset)
    )
    assert query == graph_statement(_LIST[path])
    plan = explain(chain, query, params)
    scanned = seq_scanned(plan)
    message = f"{_LIST[path]} seq-scans {sorted(scanned)} with {params!r}:\n{outline(plan)}"
    assert not scanned & (BIG_TABLES | CHANGE_TABLES), message
    assert scanned <= SMALL, message


def analyzed(conn: psycopg.Connection[Any], query: str, params: Any) -> dict[str, Any]:
    """The root node of the plan of query run with these parameters, with what each node did."""
    row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params).fetchone()
    assert row is not None
    return row[0][0]["Plan"]


def net_change_walks(plan: dict[str, Any]) -> list[tuple[str, int]]:
    """(index, rows read) of each read of net_changes that ran: the rows it returned and
    the rows its filter removed."""
    return [
        (node.get("Index Name", node["Node Type"]),
         int(node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"])
        for node in nodes(plan)
        if node.get("Relation Name") == "net_changes" and node["Actual Loops"]
    ]  # fmt: skip


def own_rows(conn: RecordingConnection, filters: dict[str, Any], since: int) -> int:
    """How many rows of generation NEWEST a walk for since may read: the rows that answer
    for it (of the kind filtered on, and for a block of kind changed, for the oldest since,
    whose range is of net_changes_kind_lo_idx in an export; of every kind for the previous,
    whose range of net_changes_until_idx filters on the kind)."""
    _, page = list_changes_since(conn, filters, since, 0, 0)
    if since == PREVIOUS:
        return sum(page.counts.values())
    return page.counts[filters.get("kind", "changed")] if filters else page.total


def sorted_rows(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The sorts that ran on rows (a sort under a branch whose one-time filter is false
    starts, and sorts no row)."""
    return [node for node in nodes(plan) if node["Node Type"] == "Sort" and node["Actual Rows"]]


@pytest.mark.parametrize("since", [OLDEST, PREVIOUS], ids=["oldest-since", "previous"])
@pytest.mark.parametrize("last", [False, True], ids=["first-page", "last-page"])
@pytest.mark.parametrize("path", list(CASES))
def test_a_page_since_the_oldest_or_the_previous_walks_its_own_rows_in_order(
    chain: RecordingConnection, path: str, last: bool, since: int
) -> None:
    """Since n's oldest since (every row with lo = it) and since n - 1 (every row with until =
    n), a page is a range of an index: it sorts nothing beyond its own rows, reads no row that
    answers another since (of its kind, for the oldest since), not a walk of all of
    generation n's rows; unfiltered, or of one kind since the oldest since, it reads the rows
    up to its own last one and no further (the first page 50 rows, not the whole range), and
    unfiltered since the oldest since, its own rows only (the last page as the first:
    migration 006 numbers them)."""
    filters: dict[str, Any] = CASES[path]
    _, page = list_changes_since(chain, filters, since, 50, 0)
    offset = (max(1, -(-page.total // 50)) - 1) * 50 if last else 0
    query, params = statement_of(
        chain, lambda: list_changes_since(chain, filters, since, 50, offset)
    )
    plan = analyzed(chain, query, params)
    # PostgreSQL 16 and later may feed the page's ordered aggregate sorted input: a sort of
    # the page's own rows (the numbered rows come in place order, which the planner does not
    # know to be id order), never of a range.
    assert not [node for node in sorted_rows(plan) if node["Actual Rows"] > 50], outline(plan)
    if path != "all" and since == OLDEST:
        pytest.skip("of one kind, the oldest since starts from its bucket, as any since does")
    bound = min(offset + 50, page.total) if path == "all" else own_rows(chain, filters, since)
    if path == "all" and since == OLDEST:
        bound = min(50, page.total - offset)
    walks = net_change_walks(plan)
    assert walks and sum(read for _, read in walks) <= bound, (
        f"{walks} over {bound}:\n{outline(plan)}"
    )


def rows_from_bucket(conn: RecordingConnection, records: str, full: bool) -> int:
    """How many rows of generation NEWEST lie from the start of the bucket of a page's first
    origin (its id's first byte: net_buckets) to the page's last origin (to the end, for a
    page that is not full: its walk looks for more): every row a walk from that bucket may
    read, whatever its since and kind."""
    ids = [change["id"].removeprefix("svc:origin:") for change in orjson.loads(records)]
    row = conn.execute(
        "SELECT count(*) FROM registry_meta.net_changes WHERE generation = %s"
        " AND id >= (substr(%s, 1, 2) || '000000-0000-0000-0000-000000000000')::uuid"
        " AND (NOT %s OR id <= %s::uuid)",
        (NEWEST, ids[0], full, ids[-1]),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize(("path", "since"), [
    ("all", 2), ("kind", 2), ("block", 2), ("kind", OLDEST), ("block", OLDEST),
])  # fmt: skip
@pytest.mark.parametrize("last", [False, True], ids=["first-page", "last-page"])
def test_a_page_of_any_other_since_walks_from_the_bucket_it_starts_in(
    chain: RecordingConnection, path: str, last: bool, since: int
) -> None:
    """A since that is neither the oldest nor the previous (and the oldest, of one kind or
    block) has no range of its own: its page finds the bucket of origin ids it starts in from
    net_buckets' running counts and walks net_changes from there, so the last page reads
    about what the first does, not every row before it (migration 011)."""
    filters: dict[str, Any] = CASES[path]
    _, page = list_changes_since(chain, filters, since, 50, 0)
    offset = (max(1, -(-page.total // 50)) - 1) * 50 if last else 0
    query, params = statement_of(
        chain, lambda: list_changes_since(chain, filters, since, 50, offset)
    )
    plan = analyzed(chain, query, params)
    walked = list_changes_since(chain, filters, since, 50, offset)[1]
    bound = rows_from_bucket(chain, walked.records, walked.returned == 50)
    walks = net_change_walks(plan)
    assert walks and sum(read for _, read in walks) <= bound, (
        f"{walks} over {bound}:\n{outline(plan)}"
    )


def sorts_records(node: dict[str, Any]) -> bool:
    """Whether node is a sort of rows that carry records (read from change_log below it)."""
    return node["Node Type"] == "Sort" and any(
        below.get("Relation Name") == "change_log" for below in nodes(node)
    )


@pytest.mark.parametrize("since", [OLDEST, 2, PREVIOUS])
@pytest.mark.parametrize("column", ["line", "csv_line"])
@pytest.mark.parametrize("path", list(CASES))
def test_an_export_since_m_streams_in_id_order_without_sorting(
    chain: RecordingConnection, path: str, column: str, since: int
) -> None:
    """No export sorts its records, whatever the since (a since other than the oldest or the
    previous may sort net_changes' narrow rows, as the planner likes), nor scans a table whole."""
    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", column)
    plan = explain(
        chain,
        "DECLARE plan_check CURSOR FOR " + statement,
        {**params, "since": since, **WHOLE_EXPORT},
    )
    assert not [node for node in nodes(plan) if sorts_records(node)], outline(plan)
    scanned = seq_scanned(plan)
    assert not scanned & (BIG_TABLES | CHANGE_TABLES), outline(plan)


def change_log_reads(plan: dict[str, Any]) -> list[str]:
    """The index (or scan) each read of change_log in the plan goes through."""
    return [
        node.get("Index Name", node["Node Type"])
        for node in nodes(plan)
        if node.get("Relation Name") == "change_log"
    ]


@pytest.mark.parametrize("since", [OLDEST, 2, PREVIOUS])
@pytest.mark.parametrize("path", list(CASES))
def test_the_records_since_m_are_read_by_generation_and_id(
    chain: RecordingConnection, path: str, since: int
) -> None:
    """A page or an export since m reads each line's records from change_log by (generation,
    id) (migration 009), where one change set's entries are adjacent in the order its lines
    are read, not by the primary key (id, generation), whose entries for one generation lie
    among every other generation's: one leaf page of it a line."""
    filters: dict[str, Any] = CASES[path]
    query, page_params = statement_of(
        chain, lambda: list_changes_since(chain, filters, since, 50, 0)
    )
    _, params = filter_path(filters)
    statement = change_statement(_EXPORT[path], "graph", "line")
    declared = "DECLARE plan_check CURSOR FOR " + statement
    export = explain(chain, declared, {**params, "since": since, **WHOLE_EXPORT})
    reads = change_log_reads(explain(chain, query, page_params)) + change_log_reads(export)
    assert reads and set(reads) == {"change_log_generation_id_idx"}, reads


def line_function_calls(conn: psycopg.Connection[Any], query: str, params: Any) -> list[str]:
    """What the plan's nodes compute by calling net_change_json or net_change_csv
    (sql/definitions) rather than their bodies, inlined: a call through the SQL function
    executor for every line."""
    row = conn.execute("EXPLAIN (VERBOSE, FORMAT JSON) " + query, params).fetchone()
    assert row is not None
    outputs = [item for node in nodes(row[0][0]["Plan"]) for item in node.get("Output", ())]
    return [item for item in outputs if "registry_meta.net_change_" in item]


@pytest.mark.parametrize("column", ["line", "csv_line"])
@pytest.mark.parametrize("path", list(CASES))
def test_the_lines_since_m_are_built_in_the_statement(
    chain: RecordingConnection, path: str, column: str
) -> None:
    """Every page and export of changes since m builds its lines inside its own statement:
    the line functions are inlined (migration 007), not called once a line."""
    query, page_params = statement_of(
        chain, lambda: list_changes_since(chain, CASES[path], OLDEST, 50, 0)
    )
    page = line_function_calls(chain, query, page_params)
    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", column)
    export = line_function_calls(chain, statement, {**params, "since": OLDEST, **WHOLE_EXPORT})
    assert (page, export) == ([], [])


def oldest_since_calls(conn: psycopg.Connection[Any], query: str, params: Any) -> list[str]:
    """What the plan computes by calling a function of the oldest since (a Function Scan of
    registry_meta.oldest_since_row, or registry_meta.oldest_since in an expression) rather
    than its body, inlined: a call is planned again at every execution."""
    row = conn.execute("EXPLAIN (VERBOSE, FORMAT JSON) " + query, params).fetchone()
    assert row is not None
    found = []
    for node in nodes(row[0][0]["Plan"]):
        if node["Node Type"] == "Function Scan":
            found.append(f"Function Scan {node.get('Function Name')}")
        for key in ("Output", "Filter", "One-Time Filter", "Index Cond"):
            value = node.get(key, ())
            found += [item for item in ([value] if isinstance(value, str) else value)
                      if "oldest_since" in item]  # fmt: skip
    return found


@pytest.mark.parametrize("path", list(CASES))
def test_the_oldest_since_is_computed_in_the_statement(
    chain: RecordingConnection, path: str
) -> None:
    """The oldest since is written once (sql/definitions/oldest_since_row.sql), and every
    page, export and history of changes since m computes it inside its own statement: the
    function is inlined, not called."""
    query, page_params = statement_of(
        chain, lambda: list_changes_since(chain, CASES[path], OLDEST, 50, 0)
    )
    page = oldest_since_calls(chain, query, page_params)
    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", "line")
    export = oldest_since_calls(chain, statement, {**params, "since": OLDEST, **WHOLE_EXPORT})
    origin = str(chain.execute("SELECT id FROM registry_meta.change_log LIMIT 1").fetchone()[0])
    query, history_params = statement_of(chain, lambda: history.get_origin_history(chain, origin))
    assert (page, export, oldest_since_calls(chain, query, history_params)) == ([], [], [])


@pytest.mark.parametrize("since", [OLDEST, PREVIOUS], ids=["oldest-since", "previous"])
@pytest.mark.parametrize("path", list(CASES))
def test_an_export_since_the_oldest_or_the_previous_walks_its_own_rows_unsorted(
    chain: RecordingConnection, path: str, since: int
) -> None:
    """The export since the oldest since or the previous reads the range of its own rows, as
    its pages do, and sorts nothing on the way."""
    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", "line")
    plan = analyzed(chain, statement, {**params, "since": since, **WHOLE_EXPORT})
    assert not sorted_rows(plan), outline(plan)
    walks, bound = net_change_walks(plan), own_rows(chain, CASES[path], since)
    assert walks and sum(read for _, read in walks) <= bound, (
        f"{walks} over {bound}:\n{outline(plan)}"
    )
