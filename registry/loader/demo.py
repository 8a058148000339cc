"""`registry demo`: a synthetic but realistic graph document, streamed as it is generated.

The document is a pure function of (origins, seed): every choice comes from random.Random
instances seeded from `seed`, never from the clock, the global generator or hash().

Shape of what is written:

- one `catalog` record classifying iptv, ovp and fast. OTA is deliberately left out, for
  every seed, so the summary's `transport_inventory.ota` is null and no carriage uses "ota";
- one `feed` record (connected, plausible counts, `pending_reviews` sometimes null);
- the networks: a few very large ones (1-3 % of the origins each), a heavy tail of small
  ones, a few with no origins, about 8 % with a null name;
- per origin, in order: the origin, its governance edges, its allocation, its carriages.
  About 4 % of the origins belong to no network; most of those have no registry_id either.
  Sibling origins of a network share its registry_id, which is its address network number.

Allocation addresses are unique by construction rather than checked: network N's origin at
position i gets station `first_station + i % stations`, channel `i // stations`, so station
numbers (1 to about 60) are shared by origins of many networks. Origins without a network
are addressed under network number 1 the same way.

The first 48 origins run through every combination of reviewed x governance (no edges,
inactive edges only, one active, several active) x allocation (none, unpublished,
published, held with a reason, held with a null reason, held without the field), so any
document of at least 48 origins shows them all; later origins draw their state at random.
"""

from __future__ import annotations

import random
import unicodedata
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, BinaryIO, NamedTuple

import orjson

from registry.loader.progress import LoadProgress

CATALOG_TRANSPORTS = ("iptv", "ovp", "fast")
NETWORKLESS_SHARE = 0.04
NETWORKLESS_ADDRESS = 1
FIRST_NETWORK_ADDRESS = 10
GIANT_NETWORKS = 4
FLUSH_LINES = 16_384


def weighted_table(*weights: tuple[Any, int]) -> tuple[Any, ...]:
    """Each value repeated by its weight: draw with table[int(random() * len(table))]."""
    return tuple(value for value, weight in weights for _ in range(weight))


# The word lists and weights stay in compact rows; one item per line would bury them.
# fmt: off
BRANDS = (
    "Harbour", "Nordvik", "Skyline", "Riverside", "Summit", "Lakeland", "Meridian", "Beacon",
    "Crescent", "Redwood", "Atlas", "Northstar", "Bluewater", "Granite", "Horizon", "Orchard",
    "Pioneer", "Silverline", "Westmark", "Eastgate", "Coastal", "Valley", "Prairie", "Capital",
    "Metro", "Télé", "Čt", "Ελληνική", "日本", "Zürich", "Kraków", "Malmö", "São Paulo",
    "Île-de-France", "Łódź", "Gdańsk", "Reykjavík", "Øresund", "İstanbul", "Αθήνα", "Москва",
    "東京", "Sevilla", "Bergen", "Lyon", "Porto", "Köln", "Straße", "Cymru", "Éire",
)
NETWORK_KINDS = (
    "Media", "Broadcasting", "Group", "Networks", "Television", "Rundfunk", "Médias",
    "Radiodifusión", "Channels", "Broadcast Holdings",
)
GENRES = (
    "News", "Sport", "Kids", "Movies", "Music", "Weather", "Drama", "Comedy", "Documentary",
    "Nature", "History", "Travel", "Food", "Business", "Cinema", "Classics", "Retro", "Gaming",
    "Faith", "Shopping", "Local", "Info", "TV", "Actualités", "Deportes", "Nachrichten",
    "Noticias", "Ειδήσεις", "Спорт", "ニュース",
)
REGIONS = (
    "Nord", "Sud", "East", "West", "Central", "Coast", "Valley", "Highlands", "Kraków",
    "Zürich", "Malmö", "Αθήνα", "Москва", "東京", "Île-de-France", "Gdańsk", "Bergen", "Lyon",
    "Sevilla", "Porto", "Köln", "Cork", "Leeds", "Bristol",
)
SUFFIXES = ("",) * 14 + (" HD", " HD", " +1", " 2", " Extra", " Live")
# Names a search must treat carefully: accents, other scripts, ß, İ, and %, _ and \ taken
# literally.
FEATURED_NAMES = (
    "Télé Nord", "Čt Sport", "Ελληνική TV", "日本 News", "Pop-up 50%", "Kids_Club",
    "Back\\Beat Radio", "Straße TV", "İstanbul Haber", "Canal+ Sud",
    "ТВ Москва",  # noqa: RUF001 - Cyrillic letters that look Latin are the point here
    "Ümit Müzik", "Ciné Été", "100% Hits", "News_24/7",
)
GOVERNORS = (
    "svc:domain:regulator", "svc:domain:ofcast", "svc:domain:eu-broadcast",
    "svc:domain:nordic-council", "svc:domain:public-service", "svc:domain:rights-office",
)
HELD_REASONS = (
    "licence review", "rights dispute", "awaiting documentation", "technical fault",
    "regulatory hold", "duplicate suspected", "ownership change", "Überprüfung der Lizenz",
)

GOVERNANCE_KINDS = ("none", "inactive", "one", "several")
ALLOCATION_KINDS = (None, "unpublished", "published", "held_reason", "held_null", "held_omitted")
SHOWCASE = len(GOVERNANCE_KINDS) * len(ALLOCATION_KINDS) * 2

# Drawing from a repeated table is far cheaper than rng.choices when a million origins each
# draw a dozen times.
GOVERNANCE_TABLE = weighted_table(("none", 22), ("inactive", 8), ("one", 52), ("several", 18))
PUBLICATION_TABLE = weighted_table(
    ("published", 60), ("unpublished", 25), ("held_reason", 10), ("held_null", 3),
    ("held_omitted", 2),
)
CARRIAGE_COUNT_TABLE = weighted_table(
    (0, 6), (1, 8), (2, 10), (3, 12), (4, 13), (5, 13), (6, 11), (7, 9), (8, 7), (9, 5),
    (10, 3), (12, 2), (15, 1),
)
UNRESOLVED_COUNT_TABLE = weighted_table((0, 70), (1, 20), (2, 7), (3, 3))
TRANSPORT_TABLE = weighted_table(("iptv", 9), ("ovp", 6), ("fast", 5))
UNRESOLVED_TRANSPORT_TABLE = weighted_table(("iptv", 5), ("ovp", 4), ("fast", 3), (None, 8))
AVAILABILITY_TABLE = weighted_table(
    ("reachable", 11), ("unreachable", 2), ("degraded", 2), (None, 5)
)
SOURCE_TABLE = weighted_table(
    ("lineup", 6), ("epg", 5), ("crawler", 3), ("partner-feed", 2), ("manual", 1), (None, 3)
)
# fmt: on
PROVIDERS: dict[str | None, tuple[str | None, ...]] = {
    "iptv": ("Acme IPTV", "Acme IPTV", "FibreOne TV", "Vodacast", "Télécâble Sud", None),
    "ovp": ("StreamCo", "StreamCo", "Vidbox", "PlayHub", "Oblak Video", None),
    "fast": ("FreeLane", "Channelbox", "AdWave FAST", None),
    None: ("Legacy Import", "Unknown Aggregator", None, None),
}
HELD_EPOCH = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp())
HELD_SPAN_S = 820 * 24 * 3600


class Network(NamedTuple):
    """One planned network: its record, its origins' count and how they are addressed."""

    serial: int
    id: str
    name: str | None
    brand: str
    size: int
    address: int
    first_station: int
    stations: int
    governor: str


def slug(text: str) -> str:
    """Lower-case ASCII words joined by hyphens ('' for a name in another script)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = "".join(ch if ch.isalnum() else " " for ch in ascii_text.lower()).split()
    return "-".join(words)


# (provider, carriage id prefix) per transport, worked out once: ids read like catalog ids,
# "iptv-acme-00001234", and a serial keeps them unique.
CARRIAGE_ID_PREFIXES: dict[str | None, tuple[tuple[str | None, str], ...]] = {
    transport: tuple(
        (provider, f"{transport or 'unknown'}-{slug(provider or 'feed').split('-')[0]}-")
        for provider in providers
    )
    for transport, providers in PROVIDERS.items()
}


def plan_networks(seed: int, origins: int) -> Iterator[Network]:
    """The networks, in order; the same seed replays the same plan, so nothing is kept."""
    rng = random.Random(seed)
    remaining = origins - round(origins * NETWORKLESS_SHARE)
    giants = set(rng.sample(range(1, 30), GIANT_NETWORKS))
    cap = max(8, origins // 400)
    index = 0
    while remaining > 0:
        if index in giants:
            size = max(1, int(origins * rng.uniform(0.01, 0.03)))
        elif rng.random() < 0.02:
            size = 0  # a network nobody belongs to (yet)
        else:
            size = min(cap, int(rng.paretovariate(0.9) * 1.5))
        size = min(size, remaining)
        remaining -= size
        brand = BRANDS[int(rng.random() * len(BRANDS))]
        kind = NETWORK_KINDS[int(rng.random() * len(NETWORK_KINDS))]
        name = None if rng.random() < 0.08 else f"{brand} {kind}"
        address = FIRST_NETWORK_ADDRESS + index
        stations = max(1, min(48, size // 12 + 1))
        yield Network(
            serial=index,
            id=f"svc:network:{uuid.UUID(int=rng.getrandbits(128), version=4)}",
            name=name,
            brand=brand,
            size=size,
            address=address,
            first_station=1 + int(rng.random() * 12),
            stations=stations,
            governor=f"svc:domain:{slug(brand) or 'network'}-{address}",
        )
        index += 1


class DemoWriter:
    """Turns planned networks and random draws into document lines, buffered in big chunks."""

    def __init__(self, out: BinaryIO, rng: random.Random):
        """Write to out, drawing from rng; nothing queued, nothing counted yet."""
        self.out = out
        self.rng = rng
        self.random = rng.random
        self.buffer: list[bytes] = []
        self.counts: dict[str, int] = dict.fromkeys(
            ("catalog", "feed", "network", "origin", "governance_edge", "allocation", "carriage"),
            0,
        )
        self.origin_index = 0
        self.networkless_index = 0
        self.carriage_serial = 0

    def emit(self, kind: str, record: dict[str, Any]) -> None:
        """Queue one record as a line; write the queue out once it is large."""
        self.buffer.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        self.counts[kind] += 1
        if len(self.buffer) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        """Write everything queued."""
        if self.buffer:
            self.out.write(b"".join(self.buffer))
            self.buffer.clear()

    def header(self, origins: int, networks: int) -> None:
        """The catalog and the feed status."""
        self.emit("catalog", {"type": "catalog", "transports": list(CATALOG_TRANSPORTS)})
        rng = self.rng
        self.emit(
            "feed",
            {
                "type": "feed",
                "connected": True,
                "networks": networks,
                "iptv_networks": round(networks * rng.uniform(0.5, 0.7)),
                "ovp_networks": round(networks * rng.uniform(0.25, 0.4)),
                "channels": round(origins * rng.uniform(0.9, 1.1)),
                "programs": round(origins * rng.uniform(20, 40)),
                "reviews": round(origins * rng.uniform(0.7, 0.85)),
                "pending_reviews": (
                    None if rng.random() < 0.5 else round(origins * rng.uniform(0.01, 0.05))
                ),
            },
        )

    def network(self, network: Network) -> None:
        """One network record."""
        self.emit("network", {"type": "network", "id": network.id, "name": network.name})

    def origin_name(self, network: Network | None) -> str:
        """A channel name: the network's brand and a genre, sometimes a region or a suffix."""
        draw = self.random
        if draw() < 0.03:
            return FEATURED_NAMES[int(draw() * len(FEATURED_NAMES))]
        genre = GENRES[int(draw() * len(GENRES))]
        suffix = SUFFIXES[int(draw() * len(SUFFIXES))]
        if network is None:
            brand = REGIONS[int(draw() * len(REGIONS))]
            return f"{brand} {genre}{suffix}"
        if network.size > 12 and draw() < 0.5:
            region = REGIONS[int(draw() * len(REGIONS))]
            return f"{network.brand} {genre} {region}{suffix}"
        return f"{network.brand} {genre}{suffix}"

    def origin_state(self) -> tuple[bool, str, str | None]:
        """(reviewed, governance kind, allocation kind): every combination first, then drawn."""
        index = self.origin_index
        if index < SHOWCASE:
            governance_kinds = len(GOVERNANCE_KINDS)
            return (
                index % 2 == 0,
                GOVERNANCE_KINDS[(index // 2) % governance_kinds],
                ALLOCATION_KINDS[index // 2 // governance_kinds],
            )
        draw = self.random
        reviewed = draw() < 0.78
        governance = GOVERNANCE_TABLE[int(draw() * len(GOVERNANCE_TABLE))]
        allocated_share = 0.2 if governance in ("none", "inactive") else 0.82
        allocation: str | None = None
        if draw() < allocated_share:
            allocation = PUBLICATION_TABLE[int(draw() * len(PUBLICATION_TABLE))]
        return reviewed, governance, allocation

    def origin(self, network: Network | None, position: int) -> None:
        """One origin with its edges, allocation and carriages."""
        rng = self.rng
        origin_id = f"svc:origin:{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        reviewed, governance, allocation = self.origin_state()
        name = self.origin_name(network)
        if network is None:
            registry_id = None if self.random() < 0.65 else str(NETWORKLESS_ADDRESS)
            own_governor = f"svc:domain:independent-{self.networkless_index}"
        else:
            registry_id = None if self.random() < 0.03 else str(network.address)
            own_governor = network.governor
        self.emit(
            "origin",
            {
                "type": "origin",
                "id": origin_id,
                "name": name,
                "network_id": None if network is None else network.id,
                "registry_id": registry_id,
                "reviewed": reviewed,
            },
        )
        self.edges(origin_id, governance, own_governor)
        if allocation is not None:
            self.allocation(origin_id, allocation, network, position)
        self.carriages(origin_id)
        self.origin_index += 1
        if network is None:
            self.networkless_index += 1

    def edges(self, origin_id: str, governance: str, own_governor: str) -> None:
        """Governance edges: active ones per the kind, plus inactive ones now and then."""
        if governance == "none":
            return
        draw = self.random
        first = int(draw() * len(GOVERNORS))
        governors = (own_governor, GOVERNORS[first], GOVERNORS[(first + 1) % len(GOVERNORS)])
        if governance == "inactive":
            active, inactive = 0, 1 + (draw() < 0.3)
        elif governance == "one":
            active, inactive = 1, int(draw() < 0.25)
        else:
            active, inactive = 2 + (draw() < 0.3), int(draw() < 0.15)
        # Active edges come first, so an origin never lists one governor twice.
        for slot in range(min(active + inactive, len(governors))):
            self.emit(
                "governance_edge",
                {
                    "type": "governance_edge",
                    "origin_id": origin_id,
                    "governor_id": governors[slot],
                    "active": slot < active,
                },
            )

    def allocation(self, origin_id: str, kind: str, network: Network | None, position: int) -> None:
        """The origin's address (unique by construction) and publication state."""
        if network is None:
            address, stations, first_station = NETWORKLESS_ADDRESS, 50, 1
            position = self.networkless_index
        else:
            address, stations, first_station = (
                network.address,
                network.stations,
                network.first_station,
            )
        record: dict[str, Any] = {
            "type": "allocation",
            "origin_id": origin_id,
            "network": address,
            "station": first_station + position % stations,
            "channel": position // stations,
            "publication_status": None,
            "held_at": None,
            "held_reason": None,
        }
        if kind == "published":
            record["publication_status"] = "published"
        elif kind != "unpublished":
            record["publication_status"] = "held"
            moment = HELD_EPOCH + int(self.random() * HELD_SPAN_S)
            record["held_at"] = datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if kind == "held_reason":
                record["held_reason"] = HELD_REASONS[int(self.random() * len(HELD_REASONS))]
            elif kind == "held_omitted":
                del record["held_reason"]  # the field is optional; some producers leave it out
        self.emit("allocation", record)

    def carriages(self, origin_id: str) -> None:
        """The carriages naming the origin, then a few the catalog could not resolve."""
        draw = self.random
        named = CARRIAGE_COUNT_TABLE[int(draw() * len(CARRIAGE_COUNT_TABLE))]
        unresolved = UNRESOLVED_COUNT_TABLE[int(draw() * len(UNRESOLVED_COUNT_TABLE))]
        for number in range(named + unresolved):
            transport: str | None
            if number < named:
                transport = TRANSPORT_TABLE[int(draw() * len(TRANSPORT_TABLE))]
                target: str | None = origin_id
            else:
                transport = UNRESOLVED_TRANSPORT_TABLE[
                    int(draw() * len(UNRESOLVED_TRANSPORT_TABLE))
                ]
                target = None
            choices = CARRIAGE_ID_PREFIXES[transport]
            provider, prefix = choices[int(draw() * len(choices))]
            self.carriage_serial += 1
            self.emit(
                "carriage",
                {
                    "type": "carriage",
                    "id": f"{prefix}{self.carriage_serial:08d}",
                    "transport": transport,
                    "provider": provider,
                    "source": SOURCE_TABLE[int(draw() * len(SOURCE_TABLE))],
                    "availability": AVAILABILITY_TABLE[int(draw() * len(AVAILABILITY_TABLE))],
                    "origin_id": target,
                },
            )


def origin_slots(plan_seed: int, origins: int) -> Iterator[tuple[Network | None, int]]:
    """Each origin's network (None: it has none) and position in it, in document order;
    the network-less origins are spread evenly between the networks."""
    network_count = sum(1 for _ in plan_networks(plan_seed, origins))
    networkless = round(origins * NETWORKLESS_SHARE)
    placed = 0
    for network in plan_networks(plan_seed, origins):
        yield from ((network, position) for position in range(network.size))
        due = max(placed, networkless * (network.serial + 1) // network_count)
        yield from ((None, 0) for _ in range(placed, due))
        placed = due
    yield from ((None, 0) for _ in range(placed, networkless))


def write_planned(
    writer: DemoWriter, origins: int, plan_seed: int, progress: LoadProgress | None = None
) -> dict[str, int]:
    """Write the document planned by plan_seed through writer; return the records per type."""
    writer.header(origins, sum(1 for _ in plan_networks(plan_seed, origins)))
    for network in plan_networks(plan_seed, origins):
        writer.network(network)
    for planned, (slot, position) in enumerate(origin_slots(plan_seed, origins), start=1):
        writer.origin(slot, position)
        if progress is not None and planned % 1024 == 0:
            progress.advance(1024)
    writer.flush()
    if progress is not None:
        progress.advance(origins % 1024)
    return dict(writer.counts)


def write_demo_document(
    out: BinaryIO, origins: int = 10_000, seed: int = 1, progress: LoadProgress | None = None
) -> dict[str, int]:
    """Write a demo graph document of `origins` origins to out; return the records per type."""
    if origins < 0:
        raise ValueError(f"origins must be at least 0, not {origins}")
    rng = random.Random(seed)
    plan_seed = rng.getrandbits(64)
    return write_planned(DemoWriter(out, rng), origins, plan_seed, progress)
