"""The demo document: deterministic, valid line by line and as a whole, and covering every state."""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.records import check_record
from tests.unit.demo_twin_model import differences

ORIGINS = 2000

Record = dict[str, Any]


def generate(origins: int = ORIGINS, seed: int = 1) -> tuple[bytes, dict[str, int]]:
    """The document's bytes and the counts write_demo_document returned."""
    out = io.BytesIO()
    counts = write_demo_document(out, origins=origins, seed=seed)
    return out.getvalue(), counts


def parse(document: bytes) -> list[Record]:
    """One record per line; every line ends in a newline."""
    assert document.endswith(b"\n")
    return [orjson.loads(line) for line in document.split(b"\n")[:-1]]


def whole_document_problems(records: list[Record]) -> list[str]:
    """What registry load would reject once the whole document is in (docs/loading.md, The graph
    document)."""
    problems: list[str] = []
    by_type: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_type[record["type"]].append(record)
    for kind in ("catalog", "feed"):
        if len(by_type[kind]) > 1:
            problems.append(f"{len(by_type[kind])} {kind} records")
    network_ids = Counter(record["id"] for record in by_type["network"])
    origin_ids = Counter(record["id"].lower() for record in by_type["origin"])
    carriage_ids = Counter(record["id"] for record in by_type["carriage"])
    allocated = Counter(record["origin_id"].lower() for record in by_type["allocation"])
    addresses = Counter(
        (record["network"], record["station"], record["channel"])
        for record in by_type["allocation"]
    )
    for name, ids in (
        ("network id", network_ids),
        ("origin id", origin_ids),
        ("carriage id", carriage_ids),
        ("allocation of origin", allocated),
        ("address", addresses),
    ):
        problems += [f"{name} {key}: {count} times" for key, count in ids.items() if count > 1]
    for record in by_type["origin"]:
        if record["network_id"] is not None and record["network_id"] not in network_ids:
            problems.append(f"origin {record['id']} names an unknown network")
    for kind in ("governance_edge", "allocation", "carriage"):
        for record in by_type[kind]:
            origin_id = record["origin_id"]
            if origin_id is not None and origin_id.lower() not in origin_ids:
                problems.append(f"{kind} names an unknown origin {origin_id}")
    transports = by_type["catalog"][0]["transports"] if by_type["catalog"] else None
    for record in by_type["carriage"]:
        if transports is None:
            problems.append(f"carriage {record['id']} but no catalog")
        elif record["transport"] is not None and record["transport"] not in transports:
            problems.append(f"carriage {record['id']} uses {record['transport']}")
        if record["origin_id"] is not None and record["transport"] is None:
            problems.append(f"carriage {record['id']} names an origin but has no transport")
    return problems


class Graph:
    """The parsed demo document, indexed the way the coverage checks need it."""

    def __init__(self, records: list[Record]):
        """Group the records by type and index origins, edges and allocations by origin id."""
        self.records = records
        self.of_type: dict[str, list[Record]] = defaultdict(list)
        for record in records:
            self.of_type[record["type"]].append(record)
        self.origins = {record["id"]: record for record in self.of_type["origin"]}
        self.edges: dict[str, list[bool]] = defaultdict(list)
        for edge in self.of_type["governance_edge"]:
            self.edges[edge["origin_id"]].append(edge["active"])
        self.allocation = {record["origin_id"]: record for record in self.of_type["allocation"]}
        self.catalog = self.of_type["catalog"][0]
        self.network_sizes = Counter(
            origin["network_id"] for origin in self.of_type["origin"] if origin["network_id"]
        )

    def governed(self, origin: Record) -> bool:
        """At least one active governance edge."""
        return any(self.edges[origin["id"]])

    def allocation_kind(self, origin: Record) -> str | None:
        """None, unpublished, published, held_reason, held_null or held_omitted."""
        allocation = self.allocation.get(origin["id"])
        if allocation is None:
            return None
        status = allocation["publication_status"]
        if status != "held":
            return status or "unpublished"
        if "held_reason" not in allocation:
            return "held_omitted"
        return "held_null" if allocation["held_reason"] is None else "held_reason"

    def governance_kind(self, origin: Record) -> str:
        """none, inactive (edges, none active), one or several active edges."""
        edges = self.edges[origin["id"]]
        active = sum(edges)
        if not edges:
            return "none"
        return "inactive" if active == 0 else "one" if active == 1 else "several"

    def any_origin(self, test: Callable[[Record], bool]) -> bool:
        """Some origin passes test."""
        return any(test(origin) for origin in self.of_type["origin"])

    def any_carriage(self, test: Callable[[Record], bool]) -> bool:
        """Some carriage passes test."""
        return any(test(carriage) for carriage in self.of_type["carriage"])


@pytest.fixture(scope="module")
def demo() -> tuple[bytes, dict[str, int]]:
    """The seed-1 document of ORIGINS origins, generated once."""
    return generate()


@pytest.fixture(scope="module")
def graph(demo: tuple[bytes, dict[str, int]]) -> Graph:
    """The seed-1 document, parsed."""
    return Graph(parse(demo[0]))


def test_the_same_seed_gives_the_same_bytes(demo: tuple[bytes, dict[str, int]]) -> None:
    """Two runs with the same origins and seed are byte-identical."""
    assert generate() == demo


def test_another_seed_gives_another_document(demo: tuple[bytes, dict[str, int]]) -> None:
    """The seed matters."""
    assert generate(seed=2)[0] != demo[0]


def test_every_line_passes_the_record_check(demo: tuple[bytes, dict[str, int]]) -> None:
    """check_record, the loader's own check, accepts every line."""
    for line, raw in enumerate(demo[0].split(b"\n")[:-1], start=1):
        checked = check_record(line, orjson.loads(raw))
        assert not isinstance(checked, list), [str(problem) for problem in checked]


def test_the_whole_document_rules_hold(graph: Graph) -> None:
    """Unique ids and addresses, resolving references, carriages within the catalog."""
    assert whole_document_problems(graph.records) == []


@pytest.mark.parametrize("origins", [0, 1, 7, 60])
def test_small_documents_are_valid_too(origins: int) -> None:
    """Tiny documents keep every rule, and hold exactly the origins asked for."""
    document, counts = generate(origins)
    records = parse(document)
    assert whole_document_problems(records) == []
    assert all(not isinstance(check_record(1, record), list) for record in records)
    assert counts["origin"] == origins


def test_the_counts_match_the_lines(demo: tuple[bytes, dict[str, int]], graph: Graph) -> None:
    """The returned counts are the records per type, and there are about ORIGINS origins."""
    document, counts = demo
    assert counts == {kind: len(records) for kind, records in graph.of_type.items()}
    assert sum(counts.values()) == document.count(b"\n")
    assert counts["origin"] == ORIGINS
    assert counts["catalog"] == counts["feed"] == 1
    assert 4 * ORIGINS <= counts["carriage"] <= 6 * ORIGINS


def test_records_come_in_a_sensible_order(graph: Graph) -> None:
    """Catalog, feed, networks, then origins each followed by their own records."""
    kinds = [record["type"] for record in graph.records]
    first_origin = kinds.index("origin")
    assert kinds[:2] == ["catalog", "feed"]
    assert set(kinds[2:first_origin]) == {"network"}
    assert "network" not in kinds[first_origin:]
    current = None
    for record in graph.records[first_origin:]:
        if record["type"] == "origin":
            current = record["id"]
        elif record.get("origin_id") is not None:
            assert record["origin_id"] == current


def test_the_output_is_written_in_chunks_as_it_goes() -> None:
    """A bigger document reaches the stream in several large writes, not one at the end."""
    sizes: list[int] = []

    class Recorder(io.RawIOBase):
        """A binary stream that only remembers how much each write carried."""

        def writable(self) -> bool:
            """Yes."""
            return True

        def write(self, data: Any) -> int:
            """Note the size."""
            sizes.append(len(data))
            return len(data)

    write_demo_document(Recorder(), origins=6000)  # type: ignore[arg-type]
    assert len(sizes) > 1
    assert min(sizes[:-1]) > 1_000_000


STATE_COVERAGE: dict[str, Callable[[Graph, Record], bool]] = {
    "reviewed but ungoverned": lambda g, o: o["reviewed"] and not g.governed(o),
    "governed but unreviewed": lambda g, o: not o["reviewed"] and g.governed(o),
    "governed but unallocated": lambda g, o: g.governed(o) and g.allocation_kind(o) is None,
    "allocated but unpublished": lambda g, o: g.allocation_kind(o) == "unpublished",
    "published": lambda g, o: g.allocation_kind(o) == "published",
    "held with a reason": lambda g, o: g.allocation_kind(o) == "held_reason",
    "held with a null reason": lambda g, o: g.allocation_kind(o) == "held_null",
    "held, held_reason left out": lambda g, o: g.allocation_kind(o) == "held_omitted",
    "only inactive edges": lambda g, o: g.governance_kind(o) == "inactive",
    "several active edges": lambda g, o: g.governance_kind(o) == "several",
    "active and inactive edges": lambda g, o: len(set(g.edges[o["id"]])) == 2,
    "no network, no registry id": lambda g, o: o["network_id"] is None and o["registry_id"] is None,
    "non-ASCII name": lambda g, o: not o["name"].isascii(),
    "name with % or _ or backslash": lambda g, o: any(ch in o["name"] for ch in "%_\\"),
}


@pytest.mark.parametrize("case", list(STATE_COVERAGE))
def test_origin_states_are_covered(graph: Graph, case: str) -> None:
    """Each origin state the invariants allow appears."""
    assert graph.any_origin(lambda origin: STATE_COVERAGE[case](graph, origin))


def test_every_combination_of_review_governance_and_allocation_appears(graph: Graph) -> None:
    """reviewed x governance kind x allocation kind: all 48 combinations."""
    seen = {
        (origin["reviewed"], graph.governance_kind(origin), graph.allocation_kind(origin))
        for origin in graph.of_type["origin"]
    }
    governance = ("none", "inactive", "one", "several")
    allocation = (None, "unpublished", "published", "held_reason", "held_null", "held_omitted")
    assert len(seen) == 2 * len(governance) * len(allocation)


CARRIAGE_COVERAGE: dict[str, Callable[[Graph, Record], bool]] = {
    "unresolved, with a transport": lambda g, c: c["origin_id"] is None and bool(c["transport"]),
    "unclassifiable": lambda g, c: c["origin_id"] is None and c["transport"] is None,
    "naming an unreviewed origin": lambda g, c: (
        c["origin_id"] is not None and not g.origins[c["origin_id"]]["reviewed"]
    ),
    "resolved": lambda g, c: c["origin_id"] is not None and g.origins[c["origin_id"]]["reviewed"],
    "reachable": lambda g, c: c["availability"] == "reachable",
    "unreachable": lambda g, c: c["availability"] == "unreachable",
    "degraded": lambda g, c: c["availability"] == "degraded",
    "availability unknown": lambda g, c: c["availability"] is None,
    "no provider": lambda g, c: c["provider"] is None,
    "no source": lambda g, c: c["source"] is None,
    "on iptv": lambda g, c: c["origin_id"] is not None and c["transport"] == "iptv",
    "on ovp": lambda g, c: c["origin_id"] is not None and c["transport"] == "ovp",
    "on fast": lambda g, c: c["origin_id"] is not None and c["transport"] == "fast",
}


@pytest.mark.parametrize("case", list(CARRIAGE_COVERAGE))
def test_carriage_kinds_are_covered(graph: Graph, case: str) -> None:
    """Each kind of carriage appears."""
    assert graph.any_carriage(lambda carriage: CARRIAGE_COVERAGE[case](graph, carriage))


def test_the_catalog_leaves_a_transport_out(graph: Graph) -> None:
    """The catalog classifies fewer than all four transports, and no carriage uses the rest."""
    transports = graph.catalog["transports"]
    assert 0 < len(transports) < 4
    used = {carriage["transport"] for carriage in graph.of_type["carriage"]}
    assert used - {None} <= set(transports)


def test_an_origin_can_have_no_carriages(graph: Graph) -> None:
    """Some origins have no presentations at all."""
    named = {carriage["origin_id"] for carriage in graph.of_type["carriage"]}
    assert graph.any_origin(lambda origin: origin["id"] not in named)


def test_networks_vary(graph: Graph) -> None:
    """Large and single-origin networks, nameless ones, siblings sharing a registry id."""
    sizes = graph.network_sizes
    assert max(sizes.values()) >= 20
    assert sum(1 for size in sizes.values() if size == 1) >= 5
    assert any(network["name"] is None for network in graph.of_type["network"])
    siblings = Counter(
        (origin["network_id"], origin["registry_id"])
        for origin in graph.of_type["origin"]
        if origin["network_id"] and origin["registry_id"]
    )
    assert max(siblings.values()) >= 10


def test_stations_are_shared_across_networks(graph: Graph) -> None:
    """Some station number is allocated under many networks, so a station filter selects."""
    networks_per_station: dict[int, set[int]] = defaultdict(set)
    for allocation in graph.of_type["allocation"]:
        networks_per_station[allocation["station"]].add(allocation["network"])
    assert max(len(networks) for networks in networks_per_station.values()) >= 10
    assert max(networks_per_station) < 100


# -- registry demo --changes F: the changed twin ----------------------------------------------


def twin_of(origins: int = ORIGINS, fraction: float = 0.02, seed: int = 1) -> tuple[bytes, Any]:
    """The twin's bytes and what write_twin_document returned."""
    out = io.BytesIO()
    twin = write_twin_document(out, origins, seed, fraction)
    return out.getvalue(), twin


def test_the_twin_is_reproducible_and_depends_on_the_fraction() -> None:
    """The same origins, seed and fraction give the same bytes; another fraction or seed not."""
    first, twin = twin_of()
    assert first == twin_of()[0]
    assert first != twin_of(fraction=0.03)[0]
    assert first != twin_of(seed=2)[0]
    assert first != generate()[0]
    assert twin.counts["origin"] == ORIGINS + twin.changes["added"] - twin.changes["removed"]


@pytest.mark.parametrize(("origins", "fraction"), [(ORIGINS, 0.02), (ORIGINS, 0.3), (800, 1.0)])
def test_the_twin_differs_in_the_expected_origins_by_kind(origins: int, fraction: float) -> None:
    """round(F x origins) origins differ: a quarter removed, a quarter added, the rest changed
    in one block each, the four blocks taking turns; found by comparing the two documents."""
    seed_document = parse(generate(origins)[0])
    document, twin = twin_of(origins, fraction)
    records = parse(document)
    total = round(origins * fraction)
    expected = {"added": total // 4, "removed": total // 4, "changed": total - total // 4 * 2}
    kinds, blocks = differences(seed_document, records)
    assert kinds == twin.changes == expected
    assert dict(blocks) == twin.blocks
    assert max(blocks.values()) - min(blocks.values()) <= 1 and len(blocks) == 4
    assert whole_document_problems(records) == []
    for line, record in enumerate(records, start=1):
        assert not isinstance(check_record(line, record), list), record


def test_the_twin_changes_each_block_in_each_way() -> None:
    """Renamed origins and networks, flipped and added edges, allocations moved, dropped,
    republished and added, carriages added and changed."""
    old, new = Graph(parse(generate()[0])), Graph(parse(twin_of(fraction=0.3)[0]))
    networks = {network["id"]: network["name"] for network in old.of_type["network"]}
    assert any(networks[net["id"]] != net["name"] for net in new.of_type["network"])
    both = old.origins.keys() & new.origins.keys()
    assert any(old.origins[key]["name"] != new.origins[key]["name"] for key in both)
    assert any(
        len(old.edges[key]) == len(new.edges[key]) != 0 and old.edges[key] != new.edges[key]
        for key in both
    )
    assert any(len(new.edges[key]) == len(old.edges[key]) + 1 for key in both)
    before, after = old.allocation, new.allocation
    assert any(key in before and key not in after for key in both)
    assert any(key not in before and key in after for key in both)
    assert any(key in before and key in after and after[key]["station"] == 0 for key in both)
    assert any(
        key in before
        and key in after
        and before[key]["publication_status"] != after[key]["publication_status"]
        for key in both
    )
    carriages = {carriage["id"]: carriage for carriage in old.of_type["carriage"]}
    assert any(c["id"] in carriages and c != carriages[c["id"]] for c in new.of_type["carriage"])
    assert any("twin" in c["id"] and c["origin_id"] in both for c in new.of_type["carriage"])


@pytest.mark.parametrize("origins", [0, 1, 7, 60])
def test_small_twins_are_valid_too(origins: int) -> None:
    """Tiny documents keep every rule; a document with origins differs in at least one."""
    document, twin = twin_of(origins, 0.02)
    assert whole_document_problems(parse(document)) == []
    assert sum(twin.changes.values()) == (1 if origins else 0)


def test_registry_demo_changes_writes_the_twin(tmp_path: Any, capsys: Any) -> None:
    """`registry demo --changes F` writes what write_twin_document writes; a fraction outside
    (0, 1] is refused as a usage error."""
    from registry.cli import main

    out = tmp_path / "twin.jsonl"
    assert main(["demo", "--origins", "300", "--changes", "0.1", "--out", str(out)]) == 0
    assert out.read_bytes() == twin_of(300, 0.1)[0]
    assert "added 7, removed 7, changed 16" in capsys.readouterr().err
    for bad in ("0", "1.5", "nan", "-0.1", "two"):
        with pytest.raises(SystemExit) as refused:
            main(["demo", "--changes", bad])
        assert refused.value.code == 2
        assert "--changes" in capsys.readouterr().err
