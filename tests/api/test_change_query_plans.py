"""The request-time statements of /registry/changes?since=m keep their indexes (contract 12):
EXPLAIN at 100,000 origins after a chain of loads of 1 % twins, not a timing.

As tests/api/test_query_plans.py: each list function runs for real, its one statement is
EXPLAINed with the parameters it sent, on a connection set up like the service's. The net
changes and the change log grow with the changes kept: neither may be read by a sequential
scan, first page or last, filtered or not, nor may an export sort its records. Since the
oldest since and since the previous generation (the sinces consumers ask most), a page or an
export reads, by EXPLAIN ANALYZE, only the net changes that answer for it: a range of an
index, not a walk of all of the generation's rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from registry.database.changes import change_statement, filter_path
from registry.database.changes_since import _EXPORT, _LIST, list_changes_since
from registry.database.conninfo import connection_kwargs
from registry.database.generations import graph_statement
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import load_document
from registry.settings import load_settings
from tests.api.test_query_plans import (
    BIG_TABLES,
    ORIGINS,
    SEED,
    RecordingConnection,
    explain,
    nodes,
    outline,
    seq_scanned,
    statement_of,
)

# Tables that grow with the changes kept: never read whole by a request.
CHANGE_TABLES = frozenset({"change_log", "net_changes"})
# registry_meta.generations has one row per load ever committed; graph_info one row;
# net_counts one per kept graph and kept since (at most REGISTRY_KEEP_GENERATIONS x
# (REGISTRY_KEEP_CHANGES + 1) rows), whatever the graph or the changes.
SMALL = frozenset({"generations", "graph_info", "net_counts"})
# Four loads: the demo, then three twins of it with 1 % of the origins changed (different
# draws, each undoing the one before), so generation 4 has net changes since 1 (its oldest
# since), 2 and 3 (its previous), and rows for each that the others do not answer with.
TWINS = (0.01, 0.0101, 0.0102)
NEWEST, OLDEST, PREVIOUS = 4, 1, 3
pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def chain(database_factory: Callable[[], str]) -> Iterator[RecordingConnection]:
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as loader:
        with tempfile.TemporaryFile() as document:
            write_demo_document(document, ORIGINS, SEED)
            document.seek(0)
            load_document(loader, document)
        for fraction in TWINS:
            with tempfile.TemporaryFile() as document:
                write_twin_document(document, ORIGINS, SEED, fraction)
                document.seek(0)
                load_document(loader, document)
    kwargs = connection_kwargs(load_settings(), conninfo)
    with RecordingConnection.connect(conninfo, **kwargs) as conn:
        conn.ran = []
        yield conn


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
    whose range is of net_changes_kind_lo_idx; of every kind for the previous, whose range
    of net_changes_until_idx filters on the kind)."""
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
    n), a page is a range of an index in id order: it sorts nothing and reads no row that
    answers another since (of its kind, for the oldest since), not a walk of all of
    generation n's rows; unfiltered, or of one kind since the oldest since, it reads the rows
    up to its own last one and no further (the first page 50 rows, not the whole range)."""
    filters: dict[str, Any] = CASES[path]
    _, page = list_changes_since(chain, filters, since, 50, 0)
    offset = (max(1, -(-page.total // 50)) - 1) * 50 if last else 0
    query, params = statement_of(
        chain, lambda: list_changes_since(chain, filters, since, 50, offset)
    )
    plan = analyzed(chain, query, params)
    assert not sorted_rows(plan), outline(plan)
    exact = path == "all" or (path == "kind" and since == OLDEST)
    bound = min(offset + 50, page.total) if exact else own_rows(chain, filters, since)
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
    plan = explain(chain, "DECLARE plan_check CURSOR FOR " + statement, {**params, "since": since})
    assert not [node for node in nodes(plan) if sorts_records(node)], outline(plan)
    scanned = seq_scanned(plan)
    assert not scanned & (BIG_TABLES | CHANGE_TABLES), outline(plan)


@pytest.mark.parametrize("since", [OLDEST, PREVIOUS], ids=["oldest-since", "previous"])
@pytest.mark.parametrize("path", list(CASES))
def test_an_export_since_the_oldest_or_the_previous_walks_its_own_rows_unsorted(
    chain: RecordingConnection, path: str, since: int
) -> None:
    """The export since the oldest since or the previous reads the range of its own rows, as
    its pages do, and sorts nothing on the way."""
    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", "line")
    plan = analyzed(chain, statement, {**params, "since": since})
    assert not sorted_rows(plan), outline(plan)
    walks, bound = net_change_walks(plan), own_rows(chain, CASES[path], since)
    assert walks and sum(read for _, read in walks) <= bound, (
        f"{walks} over {bound}:\n{outline(plan)}"
    )
