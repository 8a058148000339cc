"""The records a load stores are the ones the database once assembled as JSON.

The load used to build each Origin in SQL with json_build_object and json_agg; it now streams
flat fields and presentations, and the render workers assemble the records in Python
(registry/loader/rendering.py). That SQL is kept here as the reference: for a graph full of
awkward values (every character COPY escapes, control characters, quotes, accents, held
times with and without fractions, unreviewed origins with carriages, origins with nothing),
each stored record must be the reference record dumped through the same OriginSchema.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

import orjson
import psycopg
import pytest

from registry.loader import loading, rendering

from .graphs import Record, document, load

# The statement the load ran until the records were assembled in Python.
REFERENCE = """
    WITH presentations AS (
        SELECT c.origin_id,
               json_agg(json_build_object('carriage_id', c.id, 'transport', c.transport,
                                            'provider', c.provider, 'source', c.source,
                                            'availability', c.availability)
                         ORDER BY c.id COLLATE "C") AS items
        FROM carriages AS c
        JOIN origins AS o ON o.id = c.origin_id AND o.reviewed
        GROUP BY c.origin_id
    )
    SELECT r.pos,
           json_build_object(
               'origin', json_build_object(
                   'id', 'svc:origin:' || o.id,
                   'name', o.name,
                   'registry_id', o.registry_id,
                   'network', json_build_object('id', o.network_id, 'name', n.name)),
               'governance', json_build_object(
                   'state', CASE WHEN r.governed THEN 'governed' ELSE 'ungoverned' END,
                   'active_edges', r.active_edges),
               'bans', CASE WHEN a.origin_id IS NULL THEN
                   json_build_object('allocated', false, 'address', null, 'network', null,
                                      'station', null, 'channel', null,
                                      'publication_status', null, 'held', null)
               ELSE
                   json_build_object(
                       'allocated', true,
                       'address', concat_ws('.', a.network, a.station, a.channel),
                       'network', a.network,
                       'station', a.station,
                       'channel', a.channel,
                       'publication_status', a.publication_status,
                       'held', CASE WHEN a.publication_status = 'held' THEN json_build_object(
                           'at', to_char(a.held_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                                 || CASE WHEN date_trunc('second', a.held_at) = a.held_at THEN ''
                                         ELSE to_char(a.held_at AT TIME ZONE 'UTC', '.US') END
                                 || 'Z',
                           'reason', a.held_reason) END)
               END,
               'presentations', coalesce(p.items, '[]'::json)) AS doc
    FROM origin_rows AS r
    JOIN origins AS o ON o.id = r.id
    LEFT JOIN networks AS n ON n.id = o.network_id
    LEFT JOIN allocations AS a ON a.origin_id = o.id
    LEFT JOIN presentations AS p ON p.origin_id = o.id
    ORDER BY r.pos
"""

HELD_AT = ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.5+02:00", "1999-12-31T23:59:59.123456Z"]
AWKWARD = [
    "plain",
    "tab\there",
    "new\nline",
    "cr\rhere",
    "back\\slash",
    "\\N",
    'quote "q"',
    "bell\x07 and \x01",
    "\x08\x0b\x0c",
    "Télé Nord",
    "no-break\u00a0space",
    "emoji \U0001f4fa",
    "",
]


def graph(seed: int, origins: int) -> list[Record]:
    """A random graph drawing its texts from AWKWARD."""
    rng = random.Random(seed)
    text = lambda: rng.choice(AWKWARD)  # noqa: E731
    maybe = lambda value: None if rng.random() < 0.3 else value  # noqa: E731
    records: list[Record] = [{"type": "catalog", "transports": ["iptv", "ovp", "ota", "fast"]}]
    networks = [f"net-{n}" for n in range(4)]
    records += [{"type": "network", "id": n, "name": maybe(text())} for n in networks]
    for number in range(origins):
        origin = f"svc:origin:{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        records.append(
            {
                "type": "origin", "id": origin, "name": text(),
                "network_id": maybe(rng.choice(networks)), "registry_id": maybe(text() or "r"),
                "reviewed": rng.random() < 0.7,
            }
        )  # fmt: skip
        for edge in range(rng.randrange(3)):
            records.append(
                {
                    "type": "governance_edge", "origin_id": origin, "governor_id": f"g{edge}",
                    "active": rng.random() < 0.5,
                }
            )  # fmt: skip
        if rng.random() < 0.7:
            status = rng.choice([None, "published", "held"])
            held = None
            if status == "held":
                held = rng.choice(
                    [
                        "2026-01-02T03:04:05Z",
                        "2026-01-02T03:04:05.5+02:00",
                        "1999-12-31T23:59:59.123456Z",
                    ]
                )
            records.append(
                {
                    "type": "allocation", "origin_id": origin, "network": rng.randrange(3),
                    "station": number, "channel": rng.randrange(5), "publication_status": status,
                    "held_at": held, "held_reason": maybe(text()),
                }
            )  # fmt: skip
        for carriage in range(rng.randrange(4)):
            records.append(
                {
                    "type": "carriage", "id": f"{text()}-{number}-{carriage}",
                    "transport": rng.choice(["iptv", "ovp", "ota", "fast"]),
                    "provider": maybe(text()), "source": maybe(text()),
                    "availability": maybe(text()), "origin_id": origin,
                }
            )  # fmt: skip
    return records


@pytest.mark.parametrize(
    ("seed", "origins", "workers", "two_connections"),
    [
        (1, 300, 1, False),
        (2, 300, 2, False),
        (3, 40, 2, False),
        (4, 300, 2, True),
        (5, 40, 1, True),
    ],
)
def test_stored_records_are_the_reference_records(
    database_factory: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    origins: int,
    workers: int,
    two_connections: bool,
) -> None:
    """Rendered by one process or by workers, sent on the load's connection or on a second
    one (registry.loader.beside), every stored record is the reference's."""
    monkeypatch.setattr(rendering, "PARALLEL_FROM", 0 if workers > 1 else 10**9)
    monkeypatch.setattr(loading, "BESIDE_FROM", 0 if two_connections else 10**9)
    conninfo = database_factory()
    load(conninfo, document(graph(seed, origins)))
    with psycopg.connect(conninfo) as conn:
        conn.execute("SET search_path = graph")
        reference = conn.execute(REFERENCE).fetchall()
        stored = conn.execute("SELECT pos, doc FROM graph.origin_docs ORDER BY pos").fetchall()
    assert len(reference) == origins
    # psycopg reads the reference's json column into Python values, as orjson would.
    expected = [(pos, orjson.dumps(rendering._DUMP_ORIGIN(doc)).decode()) for pos, doc in reference]
    assert stored == expected
