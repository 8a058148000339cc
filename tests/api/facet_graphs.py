"""A wide graph for the facet tests: more than 101 networks and more than 101 stations, so
that both the rankings the load keeps (the first 101 values of each, sql/load/
build_filter_counts.sql) and the largest facet_size (100) cut real values (docs/api.md,
"Facets and ids").

About 310 origins, placed so that every ranking the load keeps has something to get wrong:

- the big network (BIG_NETWORK) holds 110 stations, a few of them more than once, and two
  unallocated origins: its station_id facet has 111 values;
- the big station (BIG_STATION) holds 110 networks, a few more than once, and two origins of
  no network: its network_id facet has 111 values;
- over the whole graph, 126 networks (null included) and 126 stations (null included), with
  distinct counts at the top, the null value tied with others (it ranks last among them) and
  a tie of count 1 across rank 100 and rank 101, so which values make the cut depends on the
  tie-break (network ids in code-point order, stations as numbers).

Network ids mix cases and number widths (code-point order puts `svc:network:B7` before
`svc:network:a3`, and `a10` before `a9`); station numbers run from 0 to 2147483647 with
widths that sort differently as text. Flags (governance, allocation status, transports,
review) vary with the origin's number, so that flag filters rank differently from the whole
graph. Variant 1 shifts the flags and leaves every fourth origin out: it differs from
variant 0 in every facet of every path (the pinned-generation tests load both), and has
exactly 101 networks (null included) and 100 stations over the whole graph, the rankings'
and facet_size's boundaries.
"""

from __future__ import annotations

from tests.api.api_support import GraphBuilder

NETWORKS = 125
STATIONS = 125
# Transports of an origin by its number (origins not reviewed have no presentation at all).
_CARRIAGES: tuple[tuple[str, ...], ...] = (
    ("iptv",),
    ("iptv", "ota"),
    (),
    ("fast",),
    ("ovp", "iptv"),
    ("ota",),
)


def network_id(index: int) -> str:
    """Network number index's id: the indexes are spread over mixed-case, mixed-width ids."""
    spread = index * 47 % NETWORKS
    return f"svc:network:{'aBcD'[spread % 4]}{spread}"


def station(index: int) -> int:
    """Station number index's number: 0 to 99, then six- and seven-digit ones, INT32_MAX last."""
    spread = (index * 53 + 7) % STATIONS
    if spread == STATIONS - 1:
        return 2_147_483_647
    return spread if spread < 100 else spread * 1000 + 7


BIG_NETWORK = network_id(0)
BIG_STATION = station(0)


def origin_uuid(number: int) -> str:
    """Origin number's uuid, the same in every variant."""
    return f"00000000-0000-4000-8000-{number:012d}"


def _placements() -> list[tuple[int | None, int | None, bool]]:
    """(network index or None, station index or None, whether the pair came before) of each
    origin, in origin order."""
    places: list[tuple[int | None, int | None, bool]] = []
    # The big network: one origin at each of 110 stations, more at the first ten.
    places += [(0, j, False) for j in range(110)]
    for j, extra in enumerate((7, 6, 5, 4, 3, 2, 2, 1, 1, 1)):
        places += [(0, j, True)] * extra
    places += [(0, None, False)] * 2
    # The big station: one origin of each of 110 networks, more of the first eight.
    places += [(k, 0, False) for k in range(1, 111)]
    for k, extra in zip(range(1, 9), (6, 5, 4, 3, 2, 2, 1, 1), strict=True):
        places += [(k, 0, True)] * extra
    places += [(None, 0, False)] * 2
    # The other networks and stations, one to three origins each.
    for t in range(15):
        places += [(111 + t % 14, 110 + t, extra > 0) for extra in range(1 + t % 3)]
    return places


def wide_graph(variant: int = 0) -> GraphBuilder:
    """The wide graph; variant 1 shifts every origin's flags and leaves every fourth out."""
    graph = GraphBuilder(catalog=["iptv", "ovp", "ota", "fast"])
    for index in range(NETWORKS):
        graph.network(network_id(index), None if index % 9 == 4 else f"Network {index}")
    channels: dict[int, int] = {}
    for number, (network, place, extra) in enumerate(_placements()):
        if variant and number % 4 == 3:
            continue
        flags = number + 2 * variant
        address = None
        if place is not None:
            channels[place] = channels.get(place, 0) + 1
            address = (1, station(place), channels[place])
        # Only origins whose pair came before are ungoverned or named Sport (some of them),
        # so that `governance_state=governed` and `search=news` keep every network and
        # station of the big network's, the big station's and the whole graph's listings,
        # with other counts.
        if not extra or flags % 2 == 0:
            edges: tuple[bool, ...] = (True,)
        else:
            edges = (False,) if flags % 3 else ()
        graph.origin(
            f"{'Sport' if extra and number % 3 == 0 else 'News'} {number}",
            uuid_text=origin_uuid(number),
            network_id=None if network is None else network_id(network),
            reviewed=flags % 7 != 3,
            edges=edges,
            address=address,
            status=("published", "held", None)[flags % 3],
            carriages=_CARRIAGES[flags % len(_CARRIAGES)],
        )
    return graph
