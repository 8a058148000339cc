"""`registry mirror verify` (docs/mirror.md) recomputes the digest of every record the copy
holds: a copy edited by hand (a record altered, removed or added) no longer agrees with its
`mirror` row nor with the service, so `verify` exits 1 naming what disagrees, and `verify
--repair` exports again, after which the copy is the registry's generation once more. With no
copy, `status` and `verify` exit 1."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from tests.mirror.conftest import STORES
from tests.mirror.mirror_copy import Store
from tests.mirror.mirror_run import assert_converged, mirror, sync
from tests.mirror.registry_stack import Registry, demo

pytestmark = [pytest.mark.e2e]

ORIGINS, SEED = 300, 81
STRANGER = "svc:origin:00000000-0000-4000-8000-0000000000ff"


def edit_by_hand(store: Store, edit: str) -> None:
    """Change the copy behind the mirror's back, as a user with SQL might."""
    records = store.records()
    origin_id = sorted(records)[len(records) // 2]
    record = records[origin_id]
    json_type = "" if store.kind == "sqlite" else "::jsonb"
    if edit == "altered":
        record["origin"]["name"] = record["origin"]["name"] + " (edited by hand)"
        statement = f"UPDATE origins SET record = ?{json_type} WHERE id = ?"
        touched = store.edit(statement, orjson.dumps(record).decode(), origin_id)
    elif edit == "removed":
        touched = store.edit("DELETE FROM origins WHERE id = ?", origin_id)
    else:
        record["origin"]["id"] = STRANGER
        statement = f"INSERT INTO origins (id, record) VALUES (?, ?{json_type})"
        touched = store.edit(statement, STRANGER, orjson.dumps(record).decode())
    assert touched == 1


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("edit", ["altered", "removed", "added"])
def test_verify_finds_a_copy_edited_by_hand_and_repair_mends_it(
    registry_factory: Callable[..., Registry],
    store_factory: Callable[[str], Store],
    edit: str,
    kind: str,
):
    """After a hand edit, verify exits 1 (with and without --url) and names the digest that
    disagrees; --repair exports again and the copy converges; verify then exits 0."""
    registry = registry_factory()
    url, store = registry.url(), store_factory(kind)
    generation = registry.load(demo(ORIGINS, SEED))
    assert_converged(store, registry, url, generation, sync(url, store))
    row = store.row()
    assert row is not None
    edit_by_hand(store, edit)
    for more in ([], ["--url", url]):
        found = mirror("verify", "--into", store.target, *more)
        said = found.stdout + found.stderr
        assert found.returncode == 1, said
        assert f"generation {generation}" in said and "digest" in said, said
    assert store.row() == row, "verify alone changes nothing"
    repaired = mirror("verify", "--into", store.target, "--url", url, "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert_converged(store, registry, url, generation)


def test_status_and_verify_without_a_copy_exit_1(store_factory: Callable[[str], Store]):
    """A store that holds no copy: status and verify exit 1 (and neither makes one)."""
    store = store_factory("sqlite")
    assert mirror("status", "--into", store.target, token=None).returncode == 1
    assert mirror("verify", "--into", store.target, token=None).returncode == 1
    assert store.row() is None
