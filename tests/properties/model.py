"""A plain-Python model of the graph document and of what the API answers for it (docs/loading.md,
The graph document; docs/api.md, Records and Listing origins), for the property tests.

Everything here is derived from the words of docs/api.md, record by record, with plain loops and
sorts: no SQL and no import from the service, so that the model cannot inherit the
implementation's mistakes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

TRANSPORTS = ("iptv", "ovp", "ota", "fast")
FILTER_NAMES = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
    "network_id",
    "station_id",
    "search",
    "id",
)
# docs/api.md, Facets and ids: the facets a listing may ask for, and how many ranked values it
# shows.
FACET_NAMES = (
    "governance_state",
    "allocation_state",
    "publication_status",
    "transport",
    "has_presentations",
    "network_id",
    "station_id",
)
FACET_SIZE_DEFAULT = 10
FEED_COUNTS = (
    "networks",
    "iptv_networks",
    "ovp_networks",
    "channels",
    "programs",
    "reviews",
    "pending_reviews",
)
ORIGIN_PREFIX = "svc:origin:"

Record = dict[str, Any]

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)


def canonical_origin_id(origin_id: str) -> str:
    """svc:origin:<uuid> with the uuid in lower case: UUIDs are case-insensitive (RFC 9562)."""
    return ORIGIN_PREFIX + origin_id[len(ORIGIN_PREFIX) :].lower()


def origin_uuid(origin_id: str) -> str:
    """The bare uuid of an origin id, as it was written."""
    return origin_id[len(ORIGIN_PREFIX) :]


def utc_instant(text: str) -> datetime:
    """An RFC 3339 date-time as an aware UTC datetime, cut to whole microseconds."""
    # PostgreSQL keeps microseconds, so digits past the sixth cannot survive a load; they
    # are dropped (the moment is the microsecond it falls in), not rounded.
    match = _RFC3339.match(text)
    assert match is not None, f"not RFC 3339: {text!r}"
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction = match.group(7) or ""
    micro = int((fraction + "000000")[:6])
    if match.group(8):
        offset = timedelta(0)
    else:
        sign = -1 if match.group(9) == "-" else 1
        offset = sign * timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
    local = datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone(offset))
    return local.astimezone(UTC)


def format_utc(moment: datetime) -> str:
    """RFC 3339 in UTC with Z; a fraction (microseconds, six digits) only when non-zero."""
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


# The search rule (docs/api.md, Listing origins), stated independently of the service's code, which
# folds with str.casefold between NFD and NFC normalisation: here, Unicode's full case folding
# (CaseFolding.txt, statuses C and F) written out for every non-ASCII character the generated
# documents and terms can hold, with the canonical decompositions and compositions they need.
# A mistake in the service's rule therefore cannot hide in the model as well.
_DECOMPOSED = {"é": "e\u0301", "É": "E\u0301", "İ": "I\u0307"}
_FOLDED = {
    "\u00df": "ss",  # LATIN SMALL LETTER SHARP S: full folding, two letters
    "\u1e9e": "ss",  # LATIN CAPITAL LETTER SHARP S
    "\u017f": "s",  # LATIN SMALL LETTER LONG S
    "\u212a": "k",  # KELVIN SIGN
    "\u03a3": "\u03c3",  # GREEK CAPITAL LETTER SIGMA
    "\u03c2": "\u03c3",  # GREEK SMALL LETTER FINAL SIGMA
    "\u0391": "\u03b1",  # GREEK CAPITAL LETTER ALPHA
    "\u041a": "\u043a",  # CYRILLIC CAPITAL LETTER KA
}
# The demo graph's own letters (registry.loader.demo's names), for the tests that search it:
# capitals to their small letters (CaseFolding.txt, status C), each precomposed letter kept
# whole, as NFC composes it again after folding.
_FOLDED.update(
    {
        "\u00ce": "\u00ee",  # LATIN CAPITAL LETTER I WITH CIRCUMFLEX
        "\u00d8": "\u00f8",  # LATIN CAPITAL LETTER O WITH STROKE
        "\u00dc": "\u00fc",  # LATIN CAPITAL LETTER U WITH DIAERESIS
        "\u010c": "\u010d",  # LATIN CAPITAL LETTER C WITH CARON
        "\u0141": "\u0142",  # LATIN CAPITAL LETTER L WITH STROKE
        "\u0395": "\u03b5",  # GREEK CAPITAL LETTER EPSILON
        "\u0412": "\u0432",  # CYRILLIC CAPITAL LETTER VE
        "\u041c": "\u043c",  # CYRILLIC CAPITAL LETTER EM
        "\u0421": "\u0441",  # CYRILLIC CAPITAL LETTER ES
        "\u0422": "\u0442",  # CYRILLIC CAPITAL LETTER TE
    }
)
# Characters that fold to themselves: dotless i (no folding), small sigma, alpha and ka, the
# combining acute and dot above; and the demo's small letters, kana and kanji.
_SELF_FOLDED = frozenset(
    "\u0131\u03c3\u03b1\u043a\u0301\u0307"
    "\u00e3\u00ed\u00ee\u00f3\u00f6\u00f8\u00fc\u010d\u0142\u0144\u017a"
    "\u03ae\u03b4\u03b5\u03b7\u03b8\u03b9\u03ba\u03bb\u03bd"
    "\u0430\u0432\u043c\u043e\u043f\u0440\u0441\u0442"
    "\u30b9\u30cb\u30e5\u30fc\u4eac\u65e5\u672c\u6771"
)
_COMPOSED = {"e\u0301": "é"}


def caseless(text: str) -> str:
    """Canonical caseless form, from the table above: decompose, fold, compose again."""
    folded = []
    for character in text:
        for part in _DECOMPOSED.get(character, character):
            if "A" <= part <= "Z":
                folded.append(chr(ord(part) + 32))
            elif part < "\x80" or part in _SELF_FOLDED:
                folded.append(part)
            elif part in _FOLDED:
                folded.append(_FOLDED[part])
            else:
                raise ValueError(f"the model's folding table has no entry for {part!r}")
    result = "".join(folded)
    # Composed again, so that a term matches whole characters: `e` is not a substring of `é`,
    # while `TÉLÉ` and `télé`, composed or not, are the same text.
    for parts, whole in _COMPOSED.items():
        result = result.replace(parts, whole)
    return result


def search_matches(term: str, name: str, registry_id: str | None) -> bool:
    """`search`: a case-insensitive literal substring of the name or of the registry id."""
    folded = caseless(term)
    if folded in caseless(name):
        return True
    return registry_id is not None and folded in caseless(registry_id)


class RegistryModel:
    """What the API must answer for one graph document (a list of records)."""

    def __init__(self, records: Iterable[Record]):
        self.networks: dict[str, Record] = {}
        self.origins: list[Record] = []
        self.edges: list[Record] = []
        self.allocations: dict[str, Record] = {}
        self.carriages: list[Record] = []
        self.catalog: Record | None = None
        self.feed: Record | None = None
        for record in records:
            kind = record["type"]
            if kind == "network":
                self.networks[record["id"]] = record
            elif kind == "origin":
                self.origins.append(record)
            elif kind == "governance_edge":
                self.edges.append(record)
            elif kind == "allocation":
                self.allocations[canonical_origin_id(record["origin_id"])] = record
            elif kind == "carriage":
                self.carriages.append(record)
            elif kind == "catalog":
                self.catalog = record
            elif kind == "feed":
                self.feed = record
            else:
                raise AssertionError(f"unknown record type {kind!r}")
        self.reviewed = {
            canonical_origin_id(origin["id"]) for origin in self.origins if origin["reviewed"]
        }
        self.records: dict[str, Record] = {
            canonical_origin_id(origin["id"]): self._origin_record(origin)
            for origin in self.origins
        }
        self.ordered: list[Record] = sorted(self.records.values(), key=_contract_order)

    # --- docs/api.md, Records: the per-origin record
    # ------------------------------------------------------

    def _resolves(self, carriage: Record) -> bool:
        """A carriage is resolved when it names a reviewed origin."""
        origin_id = carriage["origin_id"]
        return origin_id is not None and canonical_origin_id(origin_id) in self.reviewed

    def _origin_record(self, origin: Record) -> Record:
        """The Origin record of one origin record, as docs/api.md, Records derives it."""
        key = canonical_origin_id(origin["id"])
        network_id = origin["network_id"]
        network = None if network_id is None else self.networks[network_id]
        active_edges = sum(
            1
            for edge in self.edges
            if canonical_origin_id(edge["origin_id"]) == key and edge["active"]
        )
        presentations = sorted(
            (
                {
                    "carriage_id": carriage["id"],
                    "transport": carriage["transport"],
                    "provider": carriage["provider"],
                    "source": carriage["source"],
                    "availability": carriage["availability"],
                }
                for carriage in self.carriages
                if self._resolves(carriage) and canonical_origin_id(carriage["origin_id"]) == key
            ),
            # Plain code-point order, whatever the database's collation.
            key=lambda presentation: presentation["carriage_id"],
        )
        return {
            "origin": {
                "id": key,
                "name": origin["name"],
                "registry_id": origin["registry_id"],
                "network": {
                    "id": None if network is None else network["id"],
                    "name": None if network is None else network["name"],
                },
            },
            "governance": {
                "state": "governed" if active_edges >= 1 else "ungoverned",
                "active_edges": active_edges,
            },
            "bans": _bans(self.allocations.get(key)),
            "presentations": presentations,
        }

    # --- docs/api.md, Listing origins: listing
    # ----------------------------------------------------------------------

    def matching(self, filters: dict[str, Any]) -> list[Record]:
        """Every origin record that passes every given (parsed) filter, in listing order."""
        return [record for record in self.ordered if passes(record, filters)]

    def facets(self, filters: dict[str, Any], names: list[str], size: int) -> Record:
        """The `facets` member (docs/api.md, Facets and ids) of a listing with these filters, for
        these names."""
        matching = self.matching(filters)
        return {name: self._facet(name, matching, size) for name in names}

    def _facet(self, name: str, matching: list[Record], size: int) -> Record:
        """One facet over the matching records: every value of an enumerated field, 0
        included; the ranked fields' values with a count, at most size of them."""
        if name in ENUMERATED_VALUES:
            values = [
                {"value": value, "count": sum(1 for r in matching if has_value(r, name, value))}
                for value in ENUMERATED_VALUES[name]
            ]
            return {"values": values, "truncated": False}
        counts: dict[Any, int] = {}
        for record in matching:
            value = ranked_value(record, name)
            counts[value] = counts.get(value, 0) + 1
        # By count descending, then value ascending (code points, numbers), null last.
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0] is None, item[0] or 0))
        values = []
        for value, count in ranked[:size]:
            entry: Record = {"value": value, "count": count}
            if name == "network_id":
                entry["name"] = None if value is None else self.networks[value]["name"]
            values.append(entry)
        return {"values": values, "truncated": len(ranked) > size}

    def by_address(self, network: int, station: int, channel: int) -> Record | None:
        """The record of the origin holding network.station.channel, or None."""
        for record in self.ordered:
            bans = record["bans"]
            if bans["allocated"] and (bans["network"], bans["station"], bans["channel"]) == (
                network,
                station,
                channel,
            ):
                return record
        return None

    # --- docs/api.md, Records: the two summaries
    # ------------------------------------------------------------

    def registry_summary(self) -> Record:
        """GET /registry/summary without success and generated_at."""
        governed = [r for r in self.records.values() if r["governance"]["state"] == "governed"]
        statuses = [allocation["publication_status"] for allocation in self.allocations.values()]
        connected = self.catalog is not None
        classified = set(self.catalog["transports"]) if self.catalog is not None else set()
        resolved = [carriage for carriage in self.carriages if self._resolves(carriage)]
        return {
            "canonical_origins": len(self.origins),
            "reviewed_origins": sum(1 for origin in self.origins if origin["reviewed"]),
            "governed_origins": len(governed),
            "eligible_unallocated": sum(1 for r in governed if not r["bans"]["allocated"]),
            "bans_allocated": len(self.allocations),
            "published": statuses.count("published"),
            "held": statuses.count("held"),
            "catalog_carriages": len(self.carriages) if connected else None,
            "resolved_carriages": len(resolved) if connected else None,
            "unresolved_carriages": len(self.carriages) - len(resolved) if connected else None,
            "transport_inventory": {
                transport: (
                    sum(1 for carriage in self.carriages if carriage["transport"] == transport)
                    if transport in classified
                    else None
                )
                for transport in TRANSPORTS
            },
            "resolved_presentations": {
                transport: sum(1 for carriage in resolved if carriage["transport"] == transport)
                for transport in TRANSPORTS
            },
        }

    def integration_status(self) -> Record:
        """GET /summary without generated_at: the feed's non-null fields, or not connected."""
        if self.feed is None:
            return {"success": True, "connected": False}
        status: Record = {"success": True, "connected": self.feed["connected"]}
        for name in FEED_COUNTS:
            if self.feed[name] is not None:
                status[name] = self.feed[name]
        return status


def _bans(allocation: Record | None) -> Record:
    """The bans block: the allocation as loaded, or allocated false and every field null."""
    if allocation is None:
        return {
            "allocated": False,
            "address": None,
            "network": None,
            "station": None,
            "channel": None,
            "publication_status": None,
            "held": None,
        }
    status = allocation["publication_status"]
    held = None
    if status == "held":
        held = {
            "at": format_utc(utc_instant(allocation["held_at"])),
            "reason": allocation.get("held_reason"),
        }
    return {
        "allocated": True,
        "address": f"{allocation['network']}.{allocation['station']}.{allocation['channel']}",
        "network": allocation["network"],
        "station": allocation["station"],
        "channel": allocation["channel"],
        "publication_status": status,
        "held": held,
    }


def _contract_order(record: Record) -> tuple[Any, ...]:
    """By allocated address as numbers, unallocated after; ties by origin id (string order)."""
    bans = record["bans"]
    if bans["allocated"]:
        return (0, bans["network"], bans["station"], bans["channel"], record["origin"]["id"])
    return (1, 0, 0, 0, record["origin"]["id"])


# The enumerated facets' values, in the documented order (docs/api.md, Facets and ids).
ENUMERATED_VALUES: dict[str, tuple[Any, ...]] = {
    "governance_state": ("governed", "ungoverned"),
    "allocation_state": ("allocated", "unallocated"),
    "publication_status": ("published", "held", None),
    "transport": TRANSPORTS,
    "has_presentations": (True, False),
}


def has_value(record: Record, name: str, value: Any) -> bool:
    """Whether one origin record counts under this value of an enumerated facet: transport
    as its filter reads it (a presentation on it), the others as the record shows them."""
    bans = record["bans"]
    if name == "governance_state":
        return record["governance"]["state"] == value
    if name == "allocation_state":
        return bans["allocated"] == (value == "allocated")
    if name == "publication_status":
        return bans["publication_status"] == value
    if name == "transport":
        return any(p["transport"] == value for p in record["presentations"])
    return bool(record["presentations"]) == value


def ranked_value(record: Record, name: str) -> Any:
    """The record's value of a ranked facet: its network id, or its allocation's station."""
    if name == "network_id":
        return record["origin"]["network"]["id"]
    bans = record["bans"]
    return bans["station"] if bans["allocated"] else None


def passes(record: Record, filters: dict[str, Any]) -> bool:
    """Whether one origin record passes every given filter (docs/api.md, Listing origins), each its
    own predicate."""
    bans = record["bans"]
    transports = {presentation["transport"] for presentation in record["presentations"]}
    checks = {
        "governance_state": lambda value: record["governance"]["state"] == value,
        "allocation_state": lambda value: bans["allocated"] == (value == "allocated"),
        "publication_status": lambda value: bans["publication_status"] == value,
        "transport": lambda value: value in transports,
        "has_presentations": lambda value: bool(record["presentations"]) == value,
        "network_id": lambda value: record["origin"]["network"]["id"] == value,
        "station_id": lambda value: bans["allocated"] and bans["station"] == value,
        "search": lambda value: search_matches(
            value, record["origin"]["name"], record["origin"]["registry_id"]
        ),
        "id": lambda value: record["origin"]["id"] in value,
    }
    return all(checks[name](value) for name, value in filters.items())


def parse_filters(query: dict[str, str]) -> dict[str, Any]:
    """The filters of a (valid) query string with their parsed values, as filters_applied has."""
    parsed: dict[str, Any] = {}
    for name, text in query.items():
        if name == "has_presentations":
            parsed[name] = text == "true"
        elif name == "station_id":
            parsed[name] = int(text)
        elif name == "id":
            # Prefixed or bare, any case: the prefixed lower-case ids, first time each.
            ids = [
                canonical_origin_id(ORIGIN_PREFIX + part.removeprefix(ORIGIN_PREFIX))
                for part in text.split(",")
            ]
            parsed[name] = list(dict.fromkeys(ids))
        elif name in FILTER_NAMES:
            parsed[name] = text
    return parsed


def page_block(total: int, page: int, limit: int) -> Record:
    """The page block of one page of a listing with `total` matches."""
    offset = (page - 1) * limit
    return {
        "page": page,
        "limit": limit,
        "offset": offset,
        "returned": max(0, min(limit, total - offset)),
        "total": total,
    }
