"""The request-time statements of /registry/changes?since=m keep their indexes (contract 12):
EXPLAIN at 100,000 origins after a chain of loads of 1 % twins, not a timing.

As tests/api/test_query_plans.py: each list function runs for real, its one statement is
EXPLAINed with the parameters it sent, on a connection set up like the service's. The net
changes and the change log grow with the changes kept: neither may be read by a sequential
scan, first page or last, filtered or not, nor may an export sort them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

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
# Three loads: the demo, then two twins of it with 1 % of the origins changed (different
# draws), so generation 3 has net changes since 1 and since 2.
TWINS = (0.01, 0.0101)
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


@pytest.mark.parametrize("since", [1, 2])
@pytest.mark.parametrize("last", [False, True], ids=["first-page", "last-page"])
@pytest.mark.parametrize("path", list(CASES))
def test_a_page_since_m_reads_indexes(
    chain: RecordingConnection, path: str, last: bool, since: int
) -> None:
    filters: dict[str, Any] = CASES[path]
    stamp, page = list_changes_since(chain, filters, since, 50, 0)
    assert stamp.generation == 3 and page.total > 0
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


@pytest.mark.parametrize("column", ["line", "csv_line"])
@pytest.mark.parametrize("path", list(CASES))
def test_an_export_since_m_streams_in_id_order_without_sorting(
    chain: RecordingConnection, path: str, column: str
) -> None:
    from registry.database.changes import change_statement, filter_path

    _, params = filter_path(CASES[path])
    statement = change_statement(_EXPORT[path], "graph", column)
    plan = explain(chain, "DECLARE plan_check CURSOR FOR " + statement, {**params, "since": 1})
    assert not [node for node in nodes(plan) if node["Node Type"] == "Sort"], outline(plan)
    scanned = seq_scanned(plan)
    assert not scanned & (BIG_TABLES | CHANGE_TABLES), outline(plan)
