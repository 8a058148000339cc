"""network_facet_tops as load/build_filter_counts.sql ranks it (bounded by the networks with
the largest totals) against the statement it replaced, which summed every network in every set:
the same rows for every set."""

from __future__ import annotations

import io
import tempfile
import uuid
from collections.abc import Callable

import psycopg
import pytest

from registry.loader.demo import write_demo_document
from registry.loader.loading import load_document

from .graphs import BASE, Record, document

# The statement before the bound (as it was up to 4fe7560), as a plain query: every network's
# count in every set, ranked. It is the oracle.
ORACLE = """
WITH sets AS (
    SELECT DISTINCT set, present FROM facet_keys
), per_network AS (
    SELECT c.network_id, c.combo, c.n FROM network_combo_counts AS c
    UNION ALL
    SELECT NULL, c.combo, sum(c.n) FROM facet_combo_counts AS c
    WHERE c.network_id IS NULL GROUP BY c.combo
), summed AS (
    SELECT s.set, p.network_id, sum(p.n)::bigint AS n
    FROM sets AS s
    CROSS JOIN unnest(s.present) AS m (combo)
    JOIN per_network AS p ON p.combo = m.combo
    GROUP BY s.set, p.network_id
), ranked AS (
    SELECT set, network_id, n,
           row_number() OVER (PARTITION BY set
                              ORDER BY n DESC, network_id COLLATE "C" NULLS LAST) AS rank
    FROM summed
)
SELECT set, network_id, n, rank::integer AS rank FROM ranked WHERE rank <= 101
"""

Row = tuple[int, str | None, int, int]


def _rows(conn: psycopg.Connection, query: str) -> list[Row]:
    """The rows of a query over the live graph, in (set, rank) order."""
    with conn.transaction():
        conn.execute("SET LOCAL search_path = graph")
        rows = conn.execute(f"SELECT * FROM ({query}) AS t ORDER BY 1, 4").fetchall()
    return [(s, network, n, rank) for s, network, n, rank in rows]


def _tops_match_oracle(conninfo: str, least_networks: int) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        networks = conn.execute("SELECT count(*) FROM graph.network_numbers").fetchone()
        assert networks is not None and networks[0] >= least_networks
        built = _rows(conn, "SELECT set, network_id, n, rank FROM network_facet_tops")
        expected = _rows(conn, ORACLE)
        types = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'graph.network_facet_tops'::regclass AND attnum > 0"
            " AND NOT attisdropped ORDER BY attnum"
        ).fetchall()
        left = conn.execute("SELECT to_regclass('graph.facet_network_combos')").fetchone()
    assert [name for name, _ in types] == ["set", "network_id", "n", "rank"]
    assert dict(types)["set"] == "integer" and dict(types)["rank"] == "integer"
    assert dict(types)["n"] == "bigint"
    assert left == (None,)  # the ranking's working table is dropped
    assert expected  # the oracle ranked something
    by_set: dict[int, list[Row]] = {}
    for row in expected:
        by_set.setdefault(row[0], []).append(row)
    built_by_set: dict[int, list[Row]] = {}
    for row in built:
        built_by_set.setdefault(row[0], []).append(row)
    assert sorted(built_by_set) == sorted(by_set)
    for key, rows in by_set.items():
        assert built_by_set[key] == rows, f"set {key}"


@pytest.mark.parametrize(("origins", "seed"), [(4_000, 1), (3_000, 5)])
def test_network_facet_tops_match_summing_every_network(
    database_factory: Callable[[], str], origins: int, seed: int
) -> None:
    """A demo graph with hundreds of networks of varied sizes, and no network on many
    origins: the bounded ranking keeps exactly the rows that summing every network kept,
    set by set (the sets whose first 101 the bound prunes among them)."""
    conninfo = database_factory()
    with tempfile.TemporaryFile() as out:
        write_demo_document(out, origins, seed)
        out.seek(0)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            load_document(conn, out)
    _tops_match_oracle(conninfo, least_networks=300)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # The graph exercises what the bound must get right: sets with more than 101
        # networks (pruned), and no network ranked among them.
        full = conn.execute(
            "SELECT count(DISTINCT set) FROM graph.network_facet_tops WHERE rank = 101"
        ).fetchone()
        nulls = conn.execute(
            "SELECT count(*) FROM graph.network_facet_tops WHERE network_id IS NULL"
        ).fetchone()
    assert full is not None and full[0] > 0
    assert nulls is not None and nulls[0] > 0


def _uid(kind: str, number: int) -> str:
    return f"svc:{kind}:{uuid.UUID(int=number, version=4)}"


def test_network_facet_tops_at_the_bound(database_factory: Callable[[], str]) -> None:
    """Counts that are not all tied at the 101st: 99 networks of 2 origins, no network on 2
    (ranked last of them), then 51 networks of 1 origin (BASE's North among them). Unfiltered,
    the 101st is a network of 1 origin, below the 100th largest total: a bound one rank too
    high, or no network left out of the candidates, loses it. Half the origins are
    reviewed, so the sets by reviewed split the counts."""
    records: list[Record] = list(BASE)
    origins = 0
    for number in range(1, 151):
        network = _uid("network", number)
        records.append({"type": "network", "id": network, "name": f"N{number}"})
        for _ in range(2 if number <= 99 else 1):
            origins += 1
            records.append(
                {
                    "type": "origin",
                    "id": _uid("origin", origins),
                    "name": f"O{origins}",
                    "network_id": network,
                    "registry_id": None,
                    "reviewed": origins % 2 == 0,
                }
            )
    origins += 1
    records.append(
        {
            "type": "origin",
            "id": _uid("origin", origins),
            "name": f"O{origins}",
            "network_id": None,
            "registry_id": None,
            "reviewed": False,
        }
    )
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(conn, io.BytesIO(document(records)))
    _tops_match_oracle(conninfo, least_networks=151)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        ranks = conn.execute(
            "SELECT t.rank, t.network_id IS NULL, t.n FROM graph.network_facet_tops AS t"
            " JOIN graph.facet_keys AS k ON k.set = t.set"
            " WHERE k.key = '||||' AND t.rank IN (100, 101) ORDER BY t.rank"
        ).fetchall()
    assert ranks == [(100, True, 2), (101, False, 1)]


def test_network_facet_tops_with_fewer_than_101_networks(
    database_factory: Callable[[], str],
) -> None:
    """With fewer networks than a ranking keeps, the bound is 0 and every network is ranked."""
    conninfo = database_factory()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        load_document(conn, io.BytesIO(document(BASE)))
    _tops_match_oracle(conninfo, least_networks=1)
