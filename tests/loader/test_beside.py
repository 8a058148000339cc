"""A large load sends the carriages and the rendered records on a second connection.

registry.loader.beside fills those two tables in a staging schema on a second connection and
the load's transaction moves them into graph_next. These tests turn it on for small graphs
(BESIDE_FROM = 0) and check that the graph it publishes is the one a single connection
publishes, table by table, key by key; that a refused or failed load still changes nothing
and leaves no staging schema; and that a staging schema left by a killed loader goes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from registry.loader import beside, loading, rendering
from registry.loader.loading import LoadRejected, load_document

from .conftest import ServedGraph
from .graphs import BASE, NETWORK_ID, UNKNOWN_ORIGIN_ID, appended, document, graph_state, load
from .test_record_assembly import graph

# Every table of a published graph but graph_info, whose load time differs between loads.
TABLES = (
    "networks", "origins", "governance_edges", "allocations", "carriages", "catalog", "feed",
    "origin_rows", "origin_search", "origin_csv", "origin_docs", "registry_summary",
    "combo_counts", "network_combo_counts", "station_combo_counts", "block_combo_counts",
)  # fmt: skip


@pytest.fixture
def on_two_connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loads use the second connection whatever their size, and render in worker processes."""
    monkeypatch.setattr(loading, "BESIDE_FROM", 0)
    monkeypatch.setattr(rendering, "PARALLEL_FROM", 0)
    yield


def _stage_schemas(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'graph\\_stage\\_%'"
        ).fetchall()
    return [name for (name,) in rows]


def _difference(conn: psycopg.Connection, table: str) -> int:
    """Rows in one of graph.<table> and graph_g1.<table> and not (as often) in the other."""
    row = conn.execute(
        f"SELECT count(*) FROM ((TABLE graph.{table} EXCEPT ALL TABLE graph_g1.{table})"
        f" UNION ALL (TABLE graph_g1.{table} EXCEPT ALL TABLE graph.{table})) AS d"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _shape(conn: psycopg.Connection, schema: str) -> dict[str, list[tuple[str, ...]]]:
    """Each table's columns (name, type, collation), constraints and indexes."""
    columns = conn.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),"
        " coalesce(co.collname, '')"
        " FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_collation AS co ON co.oid = a.attcollation"
        " WHERE n.nspname = %s AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped"
        " ORDER BY 1, a.attnum",
        (schema,),
    ).fetchall()
    constraints = conn.execute(
        "SELECT c.relname, k.conname, replace(pg_get_constraintdef(k.oid), %s, 'S.')"
        " FROM pg_constraint AS k JOIN pg_class AS c ON c.oid = k.conrelid"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY 1, 2",
        (schema + ".", schema),
    ).fetchall()
    indexes = conn.execute(
        "SELECT tablename, indexname, replace(indexdef, %s, 'S.') FROM pg_indexes"
        " WHERE schemaname = %s ORDER BY 1, 2",
        (schema + ".", schema),
    ).fetchall()
    return {"columns": columns, "constraints": constraints, "indexes": indexes}


@pytest.mark.parametrize(("seed", "origins"), [(11, 300), (12, 40)])
def test_two_connections_publish_the_graph_one_publishes(
    database_factory: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    origins: int,
) -> None:
    """The same document loaded on one connection, then on two: the same rows in every
    table, the same columns, keys, references and indexes, and no staging schema left."""
    conninfo = database_factory()
    payload = document(graph(seed, origins))
    monkeypatch.setattr(loading, "BESIDE_FROM", 10**9)
    monkeypatch.setattr(rendering, "PARALLEL_FROM", 0)
    load(conninfo, payload)  # generation 1, kept as graph_g1
    monkeypatch.setattr(loading, "BESIDE_FROM", 0)
    load(conninfo, payload)  # generation 2, on two connections
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT count(*) FROM graph.origin_docs").fetchone() == (origins,)
        for table in TABLES:
            assert _difference(conn, table) == 0, table
        shape, one = _shape(conn, "graph"), _shape(conn, "graph_g1")
    for part in ("columns", "constraints", "indexes"):
        assert set(shape[part]) ^ set(one[part]) == set(), part
        assert shape[part] == one[part], part
    # the keys the checks add and the records' own key came along with the moved tables
    assert ("carriages", "carriages_pkey") in [row[:2] for row in shape["constraints"]]
    assert ("carriages", "carriages_origin_fk") in [row[:2] for row in shape["constraints"]]
    assert ("origin_docs", "origin_docs_pkey") in [row[:2] for row in shape["indexes"]]
    assert _stage_schemas(conninfo) == []


def test_a_refused_document_changes_nothing_and_leaves_no_stage(
    served: ServedGraph, on_two_connections: None
) -> None:
    """Two carriages with one id: refused by the key added after the carriages moved in."""
    carriage = {
        "type": "carriage", "id": "iptv-twice-1", "transport": "iptv", "provider": "acme",
        "source": None, "availability": None, "origin_id": None,
    }  # fmt: skip
    with pytest.raises(LoadRejected) as refused:
        load(served.conninfo, appended(carriage, carriage))
    assert [problem.field for problem in refused.value.problems] == ["id"]
    assert "duplicate carriage id" in refused.value.problems[0].message
    assert graph_state(served.conninfo) == served.state
    assert _stage_schemas(served.conninfo) == []


# fmt: off
_EDGE_TO_NOWHERE = {
    "type": "governance_edge", "origin_id": UNKNOWN_ORIGIN_ID, "governor_id": "svc:domain:x",
    "active": True,
}
_CARRIAGE_TO_NOWHERE = {
    "type": "carriage", "id": "iptv-nowhere", "transport": "iptv", "provider": None,
    "source": None, "availability": None, "origin_id": UNKNOWN_ORIGIN_ID,
}
_OTA_CARRIAGE = {
    "type": "carriage", "id": "ota-x", "transport": "ota", "provider": None, "source": None,
    "availability": None, "origin_id": None,
}
# fmt: on
BAD_DOCUMENTS = {
    # one report (unknown origins) covers a rule checked before the carriages are in and one
    # checked after: both lines must be reported
    "edge and carriage to unknown origins": (_EDGE_TO_NOWHERE, _CARRIAGE_TO_NOWHERE),
    "a repeated origin and a repeated carriage": (BASE[3], BASE[8]),
    "a repeated network and an unclassified carriage": (BASE[2], _OTA_CARRIAGE),
    "only a repeated carriage": (BASE[9],),
    "a network twice, then a carriage to an unknown origin": (
        {"type": "network", "id": NETWORK_ID, "name": "Again"},
        _CARRIAGE_TO_NOWHERE,
    ),
}


@pytest.mark.parametrize("name", list(BAD_DOCUMENTS))
def test_a_refusal_reports_the_same_problems_on_two_connections_as_on_one(
    served: ServedGraph, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The rules that read no carriage run while they are being sent; the reports wait for
    them. Every problem the single connection reports is reported, in the same order."""
    payload = appended(*BAD_DOCUMENTS[name])
    refusals = []
    for beside_from in (10**9, 0):
        monkeypatch.setattr(loading, "BESIDE_FROM", beside_from)
        with pytest.raises(LoadRejected) as refused:
            load(served.conninfo, payload)
        refusals.append((refused.value.problems, refused.value.total))
        assert graph_state(served.conninfo) == served.state
    assert refusals[0] == refusals[1]
    assert refusals[0][1] >= len(BAD_DOCUMENTS[name])


def test_a_failed_fill_on_the_second_connection_changes_nothing(
    served: ServedGraph, on_two_connections: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records fail to render while the second connection sends them: the load fails
    with that error, the served graph stays, and the staging schema goes."""

    def broken(self: rendering.OriginRender) -> Iterator[bytes]:
        yield b"1\t{}\n"
        raise RuntimeError("the render broke")

    monkeypatch.setattr(rendering.OriginRender, "rendered", broken)
    with pytest.raises(RuntimeError, match="the render broke"):
        load(served.conninfo, served.payload)
    assert graph_state(served.conninfo) == served.state
    assert _stage_schemas(served.conninfo) == []


def test_a_staging_schema_left_by_a_killed_loader_is_dropped_by_the_next_load(
    database_factory: Callable[[], str], example_document: bytes
) -> None:
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA graph_stage_0123456789ab")
        conn.execute("CREATE TABLE graph_stage_0123456789ab.carriages (id text)")
    load(conninfo, example_document)
    assert _stage_schemas(conninfo) == []


def test_without_a_second_connection_the_load_runs_on_one(
    database_factory: Callable[[], str],
    example_document: bytes,
    on_two_connections: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that refuses a second connection (max_connections, a role's connection
    limit) still takes the load, on the one connection it has."""

    def refused(conn: psycopg.Connection) -> psycopg.Connection:
        raise psycopg.OperationalError("FATAL: too many connections for role")

    monkeypatch.setattr(beside, "connect_beside", refused)
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        result = load_document(conn, io.BytesIO(example_document))
    assert result.counts["origin"] == 4
    assert graph_state(conninfo)["total"] == 4


def test_the_second_connection_reaches_the_same_server_as_the_first(
    database_factory: Callable[[], str],
) -> None:
    conninfo = database_factory()
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        beside.connect_beside(conn) as side,
    ):
        first = conn.execute("SELECT current_database(), current_user").fetchone()
        second = side.execute("SELECT current_database(), current_user").fetchone()
        assert first == second
        assert side.autocommit


def test_the_second_connection_does_not_choose_a_host_again(
    database_factory: Callable[[], str],
) -> None:
    """With several hosts in the URL (the first one refusing), the first connection lands on
    the one that answers; the second reaches that same server and database."""
    target = conninfo_to_dict(database_factory())
    hosts = {
        **target,
        "host": f"127.0.0.1,{target.get('host') or 'localhost'}",
        "port": f"1,{target.get('port') or 5432}",
        "target_session_attrs": "read-write",
    }
    with psycopg.connect(**hosts, autocommit=True) as conn, beside.connect_beside(conn) as side:
        assert side.info.host == conn.info.host
        assert side.info.port == conn.info.port
        assert side.execute("SELECT current_database()").fetchone() == (target["dbname"],)
