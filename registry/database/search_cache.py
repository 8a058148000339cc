"""Per-process memory of search results: the matching positions of a search, per graph.

A search's matches change only when a load replaces the graph, so the positions of every
match (in order) are worked out once per process and graph, and each later page of the same
search is a primary-key fetch of its records: exact totals at the cost of a lookup. An entry
is tied to the graph it was computed on (its identity: the load time today, the generation
once reads return one) and used only when the statement fetching the page, in its own
snapshot, still sees that graph, so a total is never stale. Bounded by the number of
positions kept; the oldest searches go first.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

# About 8 MB of positions per process (4 bytes each).
MAX_POSITIONS = 2_000_000


class SearchResult(NamedTuple):
    """The positions of one search's matches on one graph."""

    graph: Any  # the graph's identity, as the database returns it
    positions: Sequence[int]


class SearchCache:
    """Search key -> SearchResult, bounded by the positions held; safe to share between threads."""

    def __init__(self, max_positions: int = MAX_POSITIONS):
        """An empty cache."""
        self.max_positions = max_positions
        self._entries: dict[Hashable, SearchResult] = {}
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> SearchResult | None:
        """The remembered result of this search, on whatever graph it was computed."""
        return self._entries.get(key)

    def put(self, key: Hashable, graph: Any, positions: Sequence[int]) -> None:
        """Remember a search's positions on this graph (nothing if they alone are too many)."""
        kept = array("i", positions)
        if len(kept) > self.max_positions:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._held -= len(old.positions)
            while self._entries and self._held + len(kept) > self.max_positions:
                _, evicted = self._pop_oldest()
                self._held -= len(evicted.positions)
            self._entries[key] = SearchResult(graph, kept)
            self._held += len(kept)

    def _pop_oldest(self) -> tuple[Hashable, SearchResult]:
        """Remove and return the oldest entry (the caller holds the lock)."""
        key = next(iter(self._entries))
        return key, self._entries.pop(key)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
            self._held = 0

    @property
    def held(self) -> int:
        """How many positions are kept."""
        return self._held
