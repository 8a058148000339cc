"""Per-process memory of search results: the matching positions of a search, per generation.

A generation never changes once committed, so neither do a search's matches in it: their
total and the positions of the first REMEMBERED matches (in order) are worked out once per
process and generation, and each later page of the same search that falls among them is a
primary-key fetch of its records, exact total included. A page further down a search with
more matches than that (a sweep deep into a common term) runs the whole search again: a
common word at ten million origins would otherwise cost megabytes per worker for pages
almost nobody reads.
An entry is tied to the stamp (generation and commit time) it was computed on, and used only
when the statement fetching the page sees that same stamp in its own snapshot, so a total is
never stale: after a load, the first request finds a newer stamp and runs the whole search
again. Bounded by the number of positions kept and by the number of searches (a search that
matches nothing keeps no positions, yet its key and total take memory too); the oldest
searches go first.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

# About 8 MB of positions per process (4 bytes each).
MAX_POSITIONS = 2_000_000
# Positions kept per search: the first 50 pages at limit=200 (40 KB).
REMEMBERED = 10_000
# Searches kept, whatever their positions: under 1 KB each without positions (the key holds
# a search text of up to 256 characters), so about 4 MB per process at most.
MAX_ENTRIES = 4096


class SearchResult(NamedTuple):
    """The positions of one search's matches in one generation."""

    stamp: Any  # the generation's Stamp, as the search statement returned it
    total: int  # every match's, however many positions are kept
    positions: Sequence[int]  # the first matches' (all of them when total is at most REMEMBERED)

    def covers(self, offset: int, limit: int) -> bool:
        """True when the page of limit matches from offset can be read off the positions."""
        return offset + limit <= len(self.positions) or len(self.positions) == self.total


class SearchCache:
    """Search key -> SearchResult, bounded by the positions held and the number of searches;
    safe to share between threads."""

    def __init__(self, max_positions: int = MAX_POSITIONS, max_entries: int = MAX_ENTRIES):
        """An empty cache."""
        self.max_positions = max_positions
        self.max_entries = max_entries
        self._entries: dict[Hashable, SearchResult] = {}
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> SearchResult | None:
        """The remembered result of this search, in whatever generation it was computed."""
        return self._entries.get(key)

    def put(self, key: Hashable, stamp: Any, total: int, positions: Sequence[int]) -> None:
        """Remember a search's total and first positions in this generation (nothing if the
        positions alone are too many)."""
        kept = array("i", positions)
        if len(kept) > self.max_positions:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._held -= len(old.positions)
            while self._entries and (
                self._held + len(kept) > self.max_positions
                or len(self._entries) >= self.max_entries
            ):
                evicted = self._entries.pop(next(iter(self._entries)))
                self._held -= len(evicted.positions)
            self._entries[key] = SearchResult(stamp, total, kept)
            self._held += len(kept)

    def results(self) -> list[SearchResult]:
        """Every remembered result, oldest first."""
        return list(self._entries.values())

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
            self._held = 0

    def __len__(self) -> int:
        """How many searches are kept."""
        return len(self._entries)

    @property
    def held(self) -> int:
        """How many positions are kept."""
        return self._held
