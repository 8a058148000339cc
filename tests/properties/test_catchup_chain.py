"""Changes since any kept generation are the model's net changes (docs/api.md, Changes since any
generation), and a consumer that applies them to its copy of generation m holds exactly generation
n.

Hypothesis draws a chain of loads: a document, then each next one either edited from the one
before (every edit of test_change_set: origins renamed, added, removed, re-cased, their
governance, allocations and carriages changed, the whole document replaced) or an earlier
document of the chain loaded again, so that origins are changed and changed back, added then
removed, removed then re-added. Each chain is loaded with `registry load` into one database
that keeps more change sets than graphs (REGISTRY_KEEP_CHANGES 5, REGISTRY_KEEP_GENERATIONS
2), after whatever the examples before it loaded. Then, for every generation m the database
ever produced, `GET /registry/changes?since=m` answers as the model says: a 410 with its
details below the oldest since, else the net changes, read page by page through `Link`, as
NDJSON and as CSV; pinned to the generation before the newest too. And the changes applied
to the export of m (the service's while m's graph is kept, else the model's) give exactly
the export of n, JSON, NDJSON and CSV alike, and the digest of m less the hashes of the
changes' befores plus those of their afters is the digest every answer from n states. The
history of each origin the last loads held is the model's too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from registry import digest
from tests.properties.catchup_model import Chain, apply_changes, listing_order
from tests.properties.catchup_support import (
    CatchupGraph,
    changes_csv,
    changes_url,
    csv_listing_order,
    load_chains,
    ndjson,
    origins_csv,
    sweep_changes,
)
from tests.properties.change_model import counts, csv_row, matching
from tests.properties.model import Record
from tests.properties.strategies import PROPERTY_SETTINGS, examples
from tests.properties.test_change_set import change_queries
from tests.properties.test_export_listing import expected_row

KEEP_GENERATIONS, KEEP_CHANGES = 2, 5
NDJSON, CSV = "application/x-ndjson", "text/csv"


@pytest.fixture
def catchup_graph(graph_database: str) -> Iterator[CatchupGraph]:
    """A database never loaded, the app over it, keeping 5 change sets and 2 graphs."""
    graph = CatchupGraph(graph_database, KEEP_GENERATIONS, KEEP_CHANGES)
    graph.wait()
    yield graph
    graph.close()


def listing(graph: CatchupGraph, generation: int) -> list[Record]:
    """The JSON listing of a generation, all of it on one page."""
    body = graph.get(f"/registry/origins?generation={generation}&limit=200").get_json()
    assert body["page"]["total"] <= 200
    return body["origins"]


def check_net_changes(graph: CatchupGraph, m: int, n: int, expected: list[Record], limit: int):
    """since=m from n: every page by Link, NDJSON and CSV are exactly the model's changes."""
    model = graph.chain
    previous = next(g.previous for g in model.generations if g.number == n)
    first = changes_url(m, n, limit=str(limit))
    seen, bodies = sweep_changes(graph, first, m, n)
    assert seen == expected, f"since={m} generation={n}"
    for body in bodies:
        assert body["previous"] == previous
        assert body["counts"] == counts(expected)
        assert body["page"]["total"] == len(expected)
    # The same URL again within the generation: 304 on its ETag.
    etag = graph.get(first).headers["ETag"]
    again = graph.client.get(first, headers={**graph.headers, "If-None-Match": etag})
    assert again.status_code == 304
    assert ndjson(graph.get(changes_url(m, n), NDJSON)) == expected
    rows = changes_csv(graph.get(changes_url(m, n), CSV))
    assert rows == [csv_row(change) for change in expected]


def check_mirror(graph: CatchupGraph, m: int, n: int, changes: list[Record]) -> None:
    """The changes since m applied to the export of m give the export of n, in each form."""
    model = graph.chain
    kept = model.readable(m)
    model_m = listing_order(model.at(m))
    # NDJSON: the export of m (the service's while m is kept, else the model's).
    at_m = ndjson(graph.get(f"/registry/origins?generation={m}", NDJSON)) if kept else model_m
    assert at_m == model_m
    at_n = ndjson(graph.get(f"/registry/origins?generation={n}", NDJSON))
    assert apply_changes(at_m, ndjson(graph.get(changes_url(m, n), NDJSON))) == at_n
    # JSON: the listing of m and the changes read page by page.
    pages, _ = sweep_changes(graph, changes_url(m, n, limit="3"), m, n)
    json_m = listing(graph, m) if kept else model_m
    assert apply_changes(json_m, pages) == listing(graph, n)
    # CSV: rows of the ids the CSV of changes names are replaced by their records at n.
    csv_m = (
        origins_csv(graph.get(f"/registry/origins?generation={m}", CSV))
        if kept
        else [expected_row(record) for record in model_m]
    )
    named = changes_csv(graph.get(changes_url(m, n), CSV))
    touched = {row[0] for row in named}
    after = {change["id"]: change["after"] for change in changes}
    assert touched == after.keys()
    rows = [row for row in csv_m if row[0] not in touched]
    rows += [expected_row(record) for record in after.values() if record is not None]
    rows.sort(key=csv_listing_order)
    assert rows == origins_csv(graph.get(f"/registry/origins?generation={n}", CSV))


def check_digests(graph: CatchupGraph, m: int, n: int) -> None:
    """The digest of n, as every answer from n states it, is the digest of m (the model's
    records at m) less the hashes of the changes' befores plus those of their afters
    (registry/digest.py): a copy at m that applies since=m holds n, and can prove it."""
    exported = graph.get(changes_url(m, n), NDJSON)
    changes = ndjson(exported)
    kept = digest.from_hex(digest.digest_of(graph.chain.at(m).values()))
    for change in changes:
        if change["before"] is not None:
            kept -= digest.record_hash(change["before"])
        if change["after"] is not None:
            kept += digest.record_hash(change["after"])
    stated = exported.headers["Registry-Digest"]
    assert digest.as_hex(kept) == stated, f"since={m} generation={n}"
    at_n = graph.get(f"/registry/origins?generation={n}", NDJSON)
    assert at_n.headers["Registry-Digest"] == stated
    assert digest.digest_of(ndjson(at_n)) == stated
    listed = graph.get(f"/registry/generations?generation={n}").get_json()["generations"]
    assert listed[0]["generation"] == n and listed[0]["digest"] == stated


def check_error(response: Any, status: int, expected: Any) -> None:
    """A 400 names `since` in its details; a 404 or 410 is the documented body, whole."""
    assert response.status_code == status, (response.status_code, response.get_data())
    assert response.mimetype == "application/json"
    body = response.get_json()
    if status == 400:
        assert body["success"] is False
        assert body["error"] == "Invalid request parameters"
        assert list(body["details"]) == ["since"]
    else:
        assert body == expected


@settings(PROPERTY_SETTINGS, max_examples=examples(12))
@given(chain=load_chains(), limit=st.integers(1, 4), query=change_queries())
def test_changes_since_every_kept_generation_rebuild_the_newest(
    catchup_graph: CatchupGraph, chain: list[list[Record]], limit: int, query: dict[str, str]
) -> None:
    """For every generation m ever produced: 410 below the oldest since, else the model's net
    changes (pages, NDJSON, CSV), which applied to the export of m give the export of n."""
    graph = catchup_graph
    for records in chain:
        graph.load(records)
    model: Chain = graph.chain
    n = model.current
    plain = graph.get(changes_url(None)).get_json()
    assert plain["since"] == plain["previous"] == model.generations[-1].previous
    for generation in model.generations:
        m = generation.number
        status, expected = model.since(m)
        if status != 200:
            event(f"since: {status}")
            check_error(graph.get(changes_url(m), status=None), status, expected)
            continue
        event(f"since: {n - m} generations back; {len(expected)} changes")
        check_net_changes(graph, m, n, expected, limit)
        check_mirror(graph, m, n, expected)
        check_digests(graph, m, n)
        # pinned to the generation before the newest, whose graph is kept
        before_n = model.generations[-2].number if len(model.generations) > 1 else n
        status, expected = model.since(m, before_n)
        response = graph.get(changes_url(m, before_n), NDJSON, status=None)
        if status == 200:
            assert ndjson(response) == expected
        else:
            check_error(response, status, expected)
    # filtered: the kind and block of a drawn query over the widest range kept
    oldest = model.oldest_since()
    expected = model.since(oldest)[1]
    selected, bodies = sweep_changes(graph, changes_url(oldest, n, **query), oldest, n)
    assert selected == matching(expected, query.get("kind"), query.get("block"))
    assert bodies[0]["counts"] == counts(expected)
    assert bodies[0]["page"]["total"] == len(selected)
    filters = {name: value for name, value in query.items() if name != "limit"}
    assert ndjson(graph.get(changes_url(oldest, n, **filters), NDJSON)) == selected
    rows = changes_csv(graph.get(changes_url(oldest, n, **filters), CSV))
    assert rows == [csv_row(change) for change in selected]
    # a well-formed since never produced, however large, is a 404
    status, expected = model.since(n + 1)
    check_error(graph.get(changes_url(n + 1), status=None), status, expected)
    check_histories(graph)


def check_histories(graph: CatchupGraph) -> None:
    """The history of every origin the last loads held, from the newest generation and
    pinned to the one before it, is the model's (docs/api.md, Changes since any generation)."""
    model = graph.chain
    ids = sorted({key for g in model.generations[-3:] for key in g.records})
    pinned = [g.number for g in model.generations[-2:]]
    for origin_id in ids[:12]:
        for n in pinned:
            expected = model.history(origin_id, n)
            url = f"/registry/origins/{origin_id}/history?generation={n}"
            response = graph.get(url, status=None)
            if expected is None:
                assert response.status_code == 404, (url, response.get_json())
                continue
            event(f"history: {min(len(expected), 4)} versions")
            assert response.status_code == 200, (url, response.get_json())
            body = response.get_json()
            assert (body["generation"], body["oldest_since"]) == (n, model.oldest_since())
            assert body["versions"] == expected, url
