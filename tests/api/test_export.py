"""GET /registry/origins as NDJSON and CSV (docs/export.md): negotiation, the rows, the stream's
connection, and one snapshot while a load commits."""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest
from flask import Flask

from registry.api.export import FIRST_BATCH
from registry.api.origin_csv import OriginCsvWriter
from tests.api.api_support import CheckedClient, GraphBuilder, origin_uuid
from tests.conftest import load_records
from tests.properties.test_export_listing import CONTRACT_COLUMNS as COLUMNS

NDJSON = {"Accept": "application/x-ndjson"}
CSV = {"Accept": "text/csv"}
CSV_TYPE = "text/csv; charset=utf-8; header=present"


def listing(client: Any, headers: dict[str, str], query: str = "") -> list[dict[str, Any]]:
    """Every origin of the JSON listing, swept page by page."""
    origins: list[dict[str, Any]] = []
    page = 1
    while True:
        separator = "&" if query else ""
        url = f"/registry/origins?{query}{separator}limit=200&page={page}"
        body = orjson.loads(client.get(url, headers=headers).get_data())
        origins += body["origins"]
        if len(origins) >= body["page"]["total"]:
            return origins
        page += 1


def ndjson_lines(response: Any) -> list[dict[str, Any]]:
    """The records of an NDJSON answer, one per line, each line ending in a newline."""
    data = response.get_data()
    assert data == b"" or data.endswith(b"\n")
    return [orjson.loads(line) for line in data.split(b"\n")[:-1]]


def csv_records(response: Any) -> list[dict[str, str]]:
    """The rows of a CSV answer by column, after checking the header row and CRLF endings."""
    text = response.get_data().decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == COLUMNS
    assert text.endswith("\r\n")
    assert all(len(row) == len(COLUMNS) for row in rows)
    return [dict(zip(COLUMNS, row, strict=True)) for row in rows[1:]]


def expected_csv(record: dict[str, Any]) -> dict[str, str]:
    """The CSV fields docs/export.md gives an Origin record, written out independently."""

    def text(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        value = str(value)
        return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value

    origin, bans = record["origin"], record["bans"]
    held = bans["held"] or {"at": None, "reason": None}
    transports = {p["transport"] for p in record["presentations"]}
    return {
        "id": origin["id"],
        "name": text(origin["name"]),
        "registry_id": text(origin["registry_id"]),
        "network_id": text(origin["network"]["id"]),
        "network_name": text(origin["network"]["name"]),
        "governance_state": record["governance"]["state"],
        "active_edges": str(record["governance"]["active_edges"]),
        "allocated": text(bans["allocated"]),
        "address": text(bans["address"]),
        "network": text(bans["network"]),
        "station": text(bans["station"]),
        "channel": text(bans["channel"]),
        "publication_status": text(bans["publication_status"]),
        "held_at": text(held["at"]),
        "held_reason": text(held["reason"]),
        "transports": ";".join(t for t in ("iptv", "ovp", "ota", "fast") if t in transports),
        "presentations": str(len(record["presentations"])),
    }


QUERIES = [
    "",
    "governance_state=governed&has_presentations=false",
    "transport=iptv",
    "search=t%C3%89L%C3%89",
    "search=50%25",
    "allocation_state=unallocated",
    "publication_status=held",
    "station_id=2",
    "network_id=svc:network:6f1c2a4e-0b7d-4c1e-9a3f-2d5e8b7c1a90",
    "network_id=svc:network:6f1c2a4e-0b7d-4c1e-9a3f-2d5e8b7c1a90&transport=fast",
    "search=harbour&governance_state=governed",
    "station_id=99",
]


@pytest.mark.parametrize("query", QUERIES)
def test_ndjson_lines_are_the_listings_origins(client: Any, admin_headers: dict, query: str):
    """Same origins, same order, same records, for every access path."""
    response = client.get(f"/registry/origins?{query}", headers={**admin_headers, **NDJSON})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Vary"] == "Accept"
    assert "X-Accel-Buffering" not in response.headers  # nginx spools exports too
    assert ndjson_lines(response) == listing(client, admin_headers, query)


@pytest.mark.parametrize("query", QUERIES)
def test_csv_rows_are_the_listings_origins(client: Any, admin_headers: dict, query: str):
    """One row per origin of the listing, in order, each field as docs/export.md says."""
    response = client.get(f"/registry/origins?{query}", headers={**admin_headers, **CSV})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == CSV_TYPE
    assert response.headers["Vary"] == "Accept"
    expected = [expected_csv(record) for record in listing(client, admin_headers, query)]
    assert csv_records(response) == expected


@pytest.mark.parametrize(
    ("accept", "wanted"),
    [
        (None, "application/json"),
        ("", "application/json"),
        ("*/*", "application/json"),
        ("application/*", "application/json"),
        ("application/json", "application/json"),
        ("text/html, application/json;q=0.5", "application/json"),
        ("application/x-ndjson", "application/x-ndjson"),
        ("application/x-ndjson, application/json;q=0.9", "application/x-ndjson"),
        ("text/csv", CSV_TYPE),
        ("text/*", CSV_TYPE),
        ("text/html, text/csv;q=0.1", CSV_TYPE),
    ],
)
def test_accept_chooses_the_representation(
    client: Any, admin_headers: dict, accept: str | None, wanted: str
):
    """JSON unless Accept prefers NDJSON or CSV; every answer says it varies on Accept."""
    headers = dict(admin_headers)
    if accept is not None:
        headers["Accept"] = accept
    response = client.get("/registry/origins", headers=headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == wanted
    assert "Accept" in response.headers["Vary"]


@pytest.mark.parametrize("accept", ["text/html", "image/png", "application/xml", "text/plain"])
def test_accept_admitting_nothing_offered_is_406(api_admin: CheckedClient, accept: str):
    """406 with the documented JSON body."""
    response = api_admin.get("/registry/origins", headers={**api_admin.headers, "Accept": accept})
    assert response.status_code == 406
    assert response.get_json() == {"success": False, "error": "Not Acceptable"}
    assert response.headers["Vary"] == "Accept"


def test_other_endpoints_answer_json_whatever_accept_says(client: Any, admin_headers: dict):
    """Only the listing negotiates."""
    for path in ("/registry/summary", "/registry/addresses/10.2.1", "/summary"):
        response = client.get(path, headers={**admin_headers, "Accept": "text/csv"})
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "application/json"


def test_the_token_comes_before_negotiation(client: Any):
    """No token: 401, whatever Accept says (an export is no way around the guard)."""
    for accept in ("text/csv", "application/x-ndjson", "text/html"):
        response = client.get("/registry/origins", headers={"Accept": accept})
        assert response.status_code == 401


@pytest.mark.parametrize(
    ("query", "details"),
    [
        ("page=1", {"page": ["not taken by an export, which streams every match; leave it out"]}),
        ("limit=5", {"limit": ["not taken by an export, which streams every match; leave it out"]}),
        (
            "limit=5&transport=tv",
            {
                "limit": ["not taken by an export, which streams every match; leave it out"],
                "transport": ["must be one of: iptv, ovp, ota, fast"],
            },
        ),
        ("bogus=1", {"bogus": ["unknown parameter"]}),
        ("station_id=x", {"station_id": ["must be a whole number written with the digits 0-9"]}),
    ],
)
def test_export_refuses_paging_and_bad_filters(
    api_admin: CheckedClient, query: str, details: dict[str, list[str]]
):
    """400 naming each bad parameter, as JSON, before any streaming starts."""
    for accept in ("text/csv", "application/x-ndjson"):
        response = api_admin.get(
            f"/registry/origins?{query}", headers={**api_admin.headers, "Accept": accept}
        )
        assert response.status_code == 400
        assert response.get_json()["details"] == details


TRICKY_NAMES = [
    "Comma, Inc.",
    'Say "cheese"',
    "Two\nlines",
    "Carriage\r\nreturn",
    "Télé Nörd — 東京 📺",
    '=HYPERLINK("http://evil.example")',
    "+1 News",
    "-minus",
    "@sum",
    "\tTabbed",
    "\rReturned",
    "'already quoted",
    " leading space",
    "plain",
]


def tricky_graph() -> GraphBuilder:
    """Origins whose names, registry ids and networks stress CSV quoting and formula guards."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    graph.network("=net", '+Formula Media, "quoted"')
    graph.network("svc:network:plain", None)
    for number, name in enumerate(TRICKY_NAMES):
        graph.origin(
            name,
            network_id="=net" if number % 2 else "svc:network:plain",
            registry_id=f"-{number}" if number % 3 == 0 else (None if number % 3 == 1 else "x,y"),
            edges=(True,) * (number % 3),
            address=(number % 4, number, 1) if number % 5 else None,
            status=("held" if number % 2 else "published") if number % 5 else None,
            held_reason="=cmd|' /C calc'!A0" if number % 5 and number % 2 else None,
            carriages=("fast", "iptv", "fast", "ota")[: number % 5],
        )
    return graph


def test_csv_survives_quotes_newlines_scripts_and_formulas(
    api_graph_factory: Callable[..., CheckedClient],
):
    """Python's csv module reads back every field; formula-like text gets a leading quote."""
    checked = api_graph_factory(tricky_graph())
    client, headers = checked.client, checked.headers
    response = client.get("/registry/origins", headers={**headers, **CSV})
    assert response.status_code == 200
    records = listing(client, headers)
    rows = csv_records(response)
    assert rows == [expected_csv(record) for record in records]
    names = {row["name"] for row in rows}
    assert '\'=HYPERLINK("http://evil.example")' in names
    assert {"'+1 News", "'-minus", "'@sum", "'\tTabbed", "'\rReturned"} <= names
    assert {"Two\nlines", "Carriage\r\nreturn", "Télé Nörd — 東京 📺", "'already quoted"} <= names
    assert all(not row[column].startswith(("=", "+", "-", "@")) for row in rows for column in row)
    assert len(rows) == len(TRICKY_NAMES)


def test_empty_export_is_a_header_row_or_nothing(
    api_graph_factory: Callable[..., CheckedClient],
):
    """No origins: CSV is the header row alone, NDJSON an empty body."""
    checked = api_graph_factory([])
    client, headers = checked.client, checked.headers
    csv_answer = client.get("/registry/origins", headers={**headers, **CSV})
    assert csv_answer.get_data() == (",".join(COLUMNS) + "\r\n").encode()
    ndjson_answer = client.get("/registry/origins", headers={**headers, **NDJSON})
    assert ndjson_answer.status_code == 200
    assert ndjson_answer.get_data() == b""


# -- the stored CSV rows, byte for byte ----------------------------------------------------------

# Text that the CSV rules treat specially, at the start, inside or at the end of a field:
# every formula start, quotes, commas, CR, LF and CRLF, a field that is nothing but one of
# them, text that merely looks quoted, non-ASCII (combining, right-to-left, emoji, Unicode
# line breaks that CSV does not treat as such) and the empty string.
AWKWARD_TEXTS = [
    "=1+1",
    "=",
    "+33 1 23 45 67 89",
    "-",
    "-12",
    "@SUM(A1:A9)",
    "\tTab first",
    "\rCR first",
    "\r\nCRLF first",
    "\nLF first",
    '"',
    '"quoted"',
    'He said "hi", then left',
    ",",
    ",leading comma",
    "trailing comma,",
    "line\nbreak",
    "cr\ronly",
    "crlf\r\ninside",
    "ends with a newline\n",
    "tab\tinside",
    "'already quoted",
    "'=already quoted formula",
    " =space first",
    "\\back\\slash\\",
    "%_ LIKE wildcards",
    "Télé Nörd — 東京 📺",
    "e\u0301 combining, and \u00a0no-break",
    "\u05e2\u05d1\u05e8\u05d9\u05ea right to left",
    "\u2028line separator\u0085next line\x0bvt\x0cff",
    "",
]
HELD_AT = (
    "2026-01-02T03:04:05Z",
    "2026-01-02T03:04:05.5Z",
    "2026-01-02T05:04:05.123456+02:00",
    "1999-12-31T23:59:59.000001-01:00",
)
CARRIAGES = ((), ("fast", "iptv", "fast", "ota"), ("ovp",), ("fast", "ota", "ovp", "iptv"))
AWKWARD_NETWORKS = {
    "=net": '+Formula Media, "quoted"',
    "@net,comma": None,
    '-"net"\r\nline': "\tTabbed\nname",
    "svc:network:plain": "Plain",
}


def awkward_graph() -> GraphBuilder:
    """Every awkward text as a name, registry id, network and held reason, beside every kind
    of allocation, hold, governance and presentation (none, repeated, all four, unreviewed)."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    for network_id, name in AWKWARD_NETWORKS.items():
        graph.network(network_id, name)
    networks = [*AWKWARD_NETWORKS, None]
    texts = len(AWKWARD_TEXTS)
    for number, name in enumerate(AWKWARD_TEXTS):
        status = ("held", "published", None, "held")[number % 4]
        graph.origin(
            name,
            uuid_text=origin_uuid(f"awkward-{number}"),
            network_id=networks[number % len(networks)],
            registry_id=(AWKWARD_TEXTS[(number + 7) % texts], None)[number % 2],
            reviewed=number % 7 != 3,
            edges=((), (True,), (False,), (True, False, True))[number % 4],
            address=(number % 3, number, 1) if number % 6 else None,
            status=status,
            held_at=HELD_AT[number % len(HELD_AT)] if status == "held" else None,
            held_reason=(AWKWARD_TEXTS[(number + 3) % texts], None)[number % 3 == 0],
            carriages=CARRIAGES[number % len(CARRIAGES)],
        )
    return graph


def records_as_csv(ndjson: bytes) -> bytes:
    """The CSV export as it was written before its rows were stored: the header, then csv_row
    of each record (the NDJSON export's lines) through Python's csv module."""
    writer = OriginCsvWriter()
    return writer.header() + writer.rows(ndjson.split(b"\n")[:-1])


AWKWARD_QUERIES = [
    "",
    "governance_state=governed",
    "publication_status=held",
    "allocation_state=unallocated&has_presentations=false",
    "transport=fast",
    "network_id=%3Dnet",
    "network_id=%3Dnet&governance_state=ungoverned",
    "station_id=4",
    "search=%22",
    "search=e&allocation_state=allocated",
]


@pytest.fixture(scope="module")
def awkward_app(
    database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]
) -> tuple[str, Flask]:
    """A database holding awkward_graph(), and an app over it."""
    conninfo = database_factory()
    load_records(conninfo, awkward_graph().records)
    return conninfo, api_app_factory(conninfo)


def csv_and_reference(app: Flask, headers: dict[str, str], query: str) -> tuple[bytes, bytes]:
    """The CSV export of query, and the CSV its records make through origin_csv.csv_row."""
    client = app.test_client()
    url = f"/registry/origins?{query}"
    table = client.get(url, headers={**headers, **CSV})
    records = client.get(url, headers={**headers, **NDJSON})
    assert table.status_code == records.status_code == 200
    return table.get_data(), records_as_csv(records.get_data())


@pytest.mark.parametrize("query", AWKWARD_QUERIES)
def test_stored_csv_rows_are_the_records_rows_byte_for_byte(
    awkward_app: tuple[str, Flask], admin_headers: dict[str, str], query: str
):
    """Rows built at load in SQL are exactly what csv_row and the csv module make of each
    record, on every access path: quoting, formula guards, nulls, holds, transports."""
    conninfo, app = awkward_app
    with psycopg.connect(conninfo) as conn:
        stored = conn.execute("SELECT count(*) FROM graph.origin_csv").fetchone()
    assert stored == (len(AWKWARD_TEXTS),)
    exported, reference = csv_and_reference(app, admin_headers, query)
    assert exported == reference
    assert len(csv_records_of(exported)) == len(csv_records_of(reference)) > 0


def csv_records_of(data: bytes) -> list[list[str]]:
    """The rows under the header of a CSV body."""
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))[1:]


def test_a_graph_loaded_before_stored_rows_exports_the_same_csv(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    admin_headers: dict[str, str],
):
    """No origin_csv (a graph loaded by earlier code): the rows are written from the records,
    the same bytes."""
    conninfo = database_factory()
    load_records(conninfo, awkward_graph().records)
    with psycopg.connect(conninfo) as conn:
        conn.execute("DROP TABLE graph.origin_csv")
    app = api_app_factory(conninfo)
    for query in AWKWARD_QUERIES:
        exported, reference = csv_and_reference(app, admin_headers, query)
        assert exported == reference, query
    whole, _ = csv_and_reference(app, admin_headers, "")
    assert len(csv_records_of(whole)) == len(AWKWARD_TEXTS)


# -- the stream's connection -----------------------------------------------------------------


def many_origins(count: int, prefix: str) -> list[dict[str, Any]]:
    """A graph of count origins named prefix-n, half of them allocated."""
    graph = GraphBuilder(catalog=["iptv", "ota"])
    for number in range(count):
        graph.origin(
            f"{prefix}-{number:05d}",
            address=(1, number // 100, number % 100) if number % 2 else None,
            edges=(True,) if number % 3 else (),
            carriages=("iptv",) if number % 4 else (),
        )
    return graph.records


@pytest.fixture(scope="module")
def big_graph(
    database_factory: Callable[[], str], api_app_factory: Callable[..., Flask]
) -> tuple[str, Flask]:
    """A database of several batches' worth of origins, and an app over it."""
    conninfo = database_factory()
    load_records(conninfo, many_origins(FIRST_BATCH * 5 + 7, "first"))
    return conninfo, api_app_factory(conninfo)


def export_sessions(conninfo: str) -> list[tuple[str, str]]:
    """(state, query) of every other session on the database that is not idle."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT state, query FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND state <> 'idle'"
        ).fetchall()
    return [(str(state), str(query)) for state, query in rows]


def pool_is_all_back(app: Flask) -> bool:
    """Every connection the app's pool may lend can be borrowed now: none is held elsewhere."""
    pool = app.extensions["registry_db"].pool
    borrowed = []
    try:
        for _ in range(pool.max_size):
            borrowed.append(pool.getconn(timeout=5))
    finally:
        for conn in borrowed:
            pool.putconn(conn)
    return len(borrowed) == pool.max_size


def test_a_client_that_goes_away_frees_the_connection_at_once(
    big_graph: tuple[str, Flask], admin_headers: dict[str, str]
):
    """Closing the body half-way ends the transaction and gives the connection back."""
    conninfo, app = big_graph
    client = app.test_client()
    response = client.get("/registry/origins", headers={**admin_headers, **NDJSON}, buffered=False)
    chunks = iter(response.response)
    first = next(chunks)
    assert first.count(b"\n") == FIRST_BATCH
    # Mid-export: its session is inside the export's transaction.
    assert [state for state, _ in export_sessions(conninfo)] == ["idle in transaction"]
    response.close()
    assert export_sessions(conninfo) == []
    assert pool_is_all_back(app)
    # The connection is sound: the next export reads everything.
    again = client.get("/registry/origins", headers={**admin_headers, **NDJSON})
    assert len(ndjson_lines(again)) == FIRST_BATCH * 5 + 7


def test_a_body_never_read_still_gives_the_connection_back(
    big_graph: tuple[str, Flask], admin_headers: dict[str, str]
):
    """Closed before the first byte (HEAD, or a client gone at once): nothing stays open."""
    conninfo, app = big_graph
    client = app.test_client()
    response = client.get("/registry/origins", headers={**admin_headers, **CSV}, buffered=False)
    assert [state for state, _ in export_sessions(conninfo)] == ["idle in transaction"]
    response.close()
    assert export_sessions(conninfo) == []
    assert pool_is_all_back(app)
    head = client.head("/registry/origins", headers={**admin_headers, **CSV})
    assert head.status_code == 200
    assert head.get_data() == b""
    head.close()  # what a server does once the (empty) body is out
    assert export_sessions(conninfo) == []
    assert pool_is_all_back(app)


@pytest.mark.parametrize("accept", [NDJSON, CSV], ids=["ndjson", "csv"])
def test_an_export_ends_on_the_graph_it_started_on_while_a_load_commits(
    database_factory: Callable[[], str],
    api_app_factory: Callable[..., Flask],
    admin_headers: dict[str, str],
    accept: dict[str, str],
):
    """A load lands half-way: the export finishes complete and exact from the old graph."""
    conninfo = database_factory()
    load_records(conninfo, many_origins(FIRST_BATCH * 4 + 3, "old"))
    app = api_app_factory(conninfo)
    client = app.test_client()
    before = listing(client, admin_headers)
    records = client.get("/registry/origins", headers={**admin_headers, **NDJSON}).get_data()
    response = client.get("/registry/origins", headers={**admin_headers, **accept}, buffered=False)
    started_on = response.headers["Registry-Generation"]
    chunks = iter(response.response)
    received = [next(chunks)]
    loading = threading.Thread(target=load_records, args=(conninfo, many_origins(50, "new")))
    loading.start()
    # Wait until the new graph is committed and answering (the export still holds its batch).
    for _ in range(600):
        total = orjson.loads(
            client.get("/registry/origins?limit=1", headers=admin_headers).get_data()
        )["page"]["total"]
        if total == 50:
            break
        threading.Event().wait(0.05)
    assert total == 50
    received += list(chunks)
    response.close()
    loading.join(timeout=120)
    assert not loading.is_alive()
    if accept is CSV:
        assert b"".join(received) == records_as_csv(records)
    else:
        assert b"".join(received) == records
        lines = [orjson.loads(line) for line in b"".join(received).split(b"\n")[:-1]]
        assert lines == before
        assert len(lines) == FIRST_BATCH * 4 + 3
    # And the next export is the new graph.
    after = client.get("/registry/origins", headers={**admin_headers, **NDJSON})
    assert [line["origin"]["name"] for line in ndjson_lines(after)][:1] == ["new-00001"]
    # The export said which generation it read, and it was the one before the load's.
    assert int(after.headers["Registry-Generation"]) == int(started_on) + 1
