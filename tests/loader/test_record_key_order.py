"""Records kept from before they were sent in their canonical form (docs/api.md, "Digests"):
an earlier code wrote each record's keys in the order its schema declared them, so a database
it loaded holds the same records in another text. A load after the upgrade compares records
as values: it finds no change where there is none, and net changes across the upgrade are
those of a database that always held sorted keys. The digests, defined on values, agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import psycopg

from registry.digest import canonical

from .test_change_log import chain_documents, load, net
from .test_digest_upgrade import digests

GRAPHS = "SELECT nspname FROM pg_namespace WHERE nspname ~ '^graph(_g[0-9]+)?$'"


def reordered(value: Any) -> Any:
    """value with every object's keys in reverse order: not the canonical form."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def unsorted(text: str | None) -> str | None:
    """A record's JSON text, its keys reversed (None stays None)."""
    if text is None:
        return None
    return orjson.dumps(reordered(orjson.loads(text))).decode()


def as_written_unsorted(conn: psycopg.Connection) -> None:
    """Rewrite every kept record, and the hash of its text, as a code that did not sort keys
    would have stored them: each graph's records and the change log's before and after."""
    for (schema,) in conn.execute(GRAPHS).fetchall():
        rows = conn.execute(f"SELECT pos, doc FROM {schema}.origin_docs").fetchall()
        for pos, doc in rows:
            conn.execute(
                f"UPDATE {schema}.origin_docs SET doc = %s WHERE pos = %s", (unsorted(doc), pos)
            )
        if conn.execute("SELECT to_regclass(%s)", (f"{schema}.origin_doc_hashes",)).fetchone()[0]:
            conn.execute(
                f"UPDATE {schema}.origin_doc_hashes AS h SET hash = md5(d.doc)::uuid"
                f" FROM {schema}.origin_docs AS d WHERE d.pos = h.pos"
            )
    rows = conn.execute("SELECT generation, id, before, after FROM registry_meta.change_log")
    for generation, origin, before, after in rows.fetchall():
        conn.execute(
            "UPDATE registry_meta.change_log SET before = %(b)s, after = %(a)s,"
            " before_hash = md5(%(b)s)::uuid, after_hash = md5(%(a)s)::uuid"
            " WHERE generation = %(g)s AND id = %(id)s",
            {"b": unsorted(before), "a": unsorted(after), "g": generation, "id": origin},
        )


def change_set(conn: psycopg.Connection, generation: int) -> dict[str, tuple[str, list[str]]]:
    """The change set kept for generation: origin id -> (kind, blocks)."""
    rows = conn.execute(
        "SELECT id::text, kind, blocks FROM registry_meta.change_log WHERE generation = %s",
        (generation,),
    ).fetchall()
    return {origin: (kind, blocks) for origin, kind, blocks in rows}


def state(conninfo: str) -> dict[str, Any]:
    """What the loads after the upgrade answer with: generation 3's and 4's change sets,
    every net change up to 4, each generation's digest."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return {
            "changes": {n: change_set(conn, n) for n in (3, 4)},
            "net": {(s, n): net(conn, s, n) for n in (3, 4) for s in range(1, n)},
            "digests": digests(conn),
        }


def test_records_kept_with_unsorted_keys_are_the_same_records_to_the_next_loads(
    database_factory: Callable[[], str],
) -> None:
    first, second = chain_documents(2)
    sorted_all_along, upgraded = database_factory(), database_factory()
    for conninfo in (sorted_all_along, upgraded):
        load(conninfo, first, keep=3)
        load(conninfo, second, keep=3)
    with psycopg.connect(upgraded, autocommit=True) as conn:
        as_written_unsorted(conn)
        live = conn.execute("SELECT doc FROM graph.origin_docs LIMIT 1").fetchone()[0]
        assert live.encode() != canonical(orjson.loads(live))  # the set-up did rewrite them
    # Generation 3 undoes the twin (some origins change back), 4 repeats 3 (nothing changes).
    for conninfo in (sorted_all_along, upgraded):
        load(conninfo, first, keep=3)
        load(conninfo, first, keep=3)

    expected, found = state(sorted_all_along), state(upgraded)
    assert expected["changes"][3] and expected["changes"][4] == {}
    assert found == expected
    # Since 1, the twin and its undoing cancel out: the same records, texts apart.
    assert expected["net"][(1, 3)] == {}
    assert expected["digests"][1] == expected["digests"][3] == expected["digests"][4]
