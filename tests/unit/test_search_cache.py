"""The per-process search memory stays within its bounds, whatever the searches."""

from __future__ import annotations

from registry.database.search_cache import MAX_ENTRIES, SearchCache


def test_searches_that_match_nothing_are_bounded_in_number():
    """Distinct searches without matches keep no positions, but each is an entry: the number
    of entries stays within the bound, and the oldest go first."""
    cache = SearchCache()
    for number in range(3 * MAX_ENTRIES):
        cache.put(("host", 5432, "db", f"%unmatched {number}%"), "stamp", 0, [])
        assert len(cache) <= MAX_ENTRIES
    assert len(cache) == MAX_ENTRIES
    assert cache.held == 0
    assert cache.get(("host", 5432, "db", "%unmatched 0%")) is None
    newest = cache.get(("host", 5432, "db", f"%unmatched {3 * MAX_ENTRIES - 1}%"))
    assert newest is not None and newest.total == 0


def test_both_bounds_hold_together():
    """Entries with positions count against both bounds; replacing a key is no new entry."""
    cache = SearchCache(max_positions=100, max_entries=3)
    for number in range(10):
        cache.put(number, "stamp", 40, range(40))
        assert len(cache) <= 3 and cache.held <= 100
    assert [result.total for result in cache.results()] == [40, 40]
    cache.put("a", "stamp", 0, [])
    cache.put("a", "stamp", 0, [])
    assert len(cache) == 3 and cache.held == 80
    cache.put("b", "stamp", 0, [])
    assert len(cache) == 3 and cache.held == 40
