"""`registry mirror` without a service: usage errors exit 2 before anything is asked or made,
`status` prints the copy or exits 1, and `verify` recomputes the digest from the records
held (docs/mirror.md, "Commands" and "Exit status")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from registry.digest import digest_of
from registry.mirror.stores import MirrorRow, open_store
from tests.cli import Finished, run_cli
from tests.conftest import dead_port
from tests.mirror.mirror_support import make_target, tamper

RECORDS = [
    {"origin": {"id": "svc:origin:1", "name": "one"}, "bans": {"allocated": False}},
    {"origin": {"id": "svc:origin:2", "name": "tw\u00f6\n"}, "bans": {"allocated": True}},
]
URL = "http://registry.example:8000"
# A usage check that let an argument through would then retry an unreachable service for
# minutes: giving up at the first failure makes such a regression an exit 1, at once.
SYNC = ["sync", "--give-up-after", "0"]


def mirror(*args: str, token: str | None = "a-token") -> Finished:
    """`registry mirror ARGS`, with REGISTRY_TOKEN set unless token is None."""
    env = {} if token is None else {"REGISTRY_TOKEN": token}
    return run_cli(["mirror", *args], env=env, unset=["REGISTRY_TOKEN"])


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A copy of generation 4 of two records, written through the store, proven."""
    target = make_target(request, tmp_path, request.param)
    store = open_store(target, create=True)
    assert store is not None
    with store.step() as writer:
        writer.insert([r["origin"]["id"] for r in RECORDS], [orjson.dumps(r) for r in RECORDS])
        writer.set_state(MirrorRow(URL, 4, digest_of(RECORDS), None, "2026-01-02T03:04:05Z"))
    store.close()
    return target


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sync", "--into", "x.sqlite"], "the following arguments are required: --url"),
        ([*SYNC, "--url", "ftp://host", "--into", "x.sqlite"], "--url must be what precedes"),
        ([*SYNC, "--url", "http://host/?a=1", "--into", "x.sqlite"], "--url must be"),
        ([*SYNC, "--url", "http://host", "--into", "x.sqlite", "--follow", "0"], "--follow"),
        (["sync", "--url", "http://host", "--into", "x.sqlite", "--token", "t"], "--token t"),
        (["verify", "--into", "x.sqlite", "--url", "host:8000"], "--url must be"),
        (["status"], "the following arguments are required: --into"),
        ([], "MIRROR_COMMAND"),
    ],
)
def test_usage_errors_exit_2_and_make_nothing(
    args: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each usage error exits 2, says what is wrong, and makes no file."""
    monkeypatch.chdir(tmp_path)
    done = mirror(*args)
    assert done.returncode == 2, done.output
    assert said in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_token_comes_from_the_environment_or_a_file_never_an_argument(
    tmp_path: Path,
) -> None:
    """No REGISTRY_TOKEN and no --token-file, a --token-file missing or empty: exit 2 before
    the service is asked (it is a dead port here, which would be exit 1) or the copy made."""
    base = f"http://127.0.0.1:{dead_port()}"
    target = str(tmp_path / "copy.sqlite")
    done = mirror(*SYNC, "--url", base, "--into", target, token=None)
    assert (done.returncode, done.stderr) == (
        2,
        "registry mirror sync: no token: set REGISTRY_TOKEN or give --token-file PATH\n",
    )
    missing = tmp_path / "no-such-token"
    done = mirror(*SYNC, "--url", base, "--into", target, "--token-file", str(missing))
    assert done.returncode == 2 and f"cannot read --token-file {missing}" in done.stderr
    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    done = mirror(*SYNC, "--url", base, "--into", target, "--token-file", str(empty))
    assert done.returncode == 2 and "is empty" in done.stderr
    assert not Path(target).exists()


def test_status_prints_the_copy(target: str) -> None:
    """One JSON object: url, generation, origins, digest, synced_at."""
    done = mirror("status", "--into", target, token=None)
    assert done.returncode == 0, done.output
    assert orjson.loads(done.stdout) == {
        "url": URL,
        "generation": 4,
        "origins": 2,
        "digest": digest_of(RECORDS),
        "synced_at": "2026-01-02T03:04:05Z",
    }


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_status_and_verify_exit_1_where_there_is_no_copy(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A file that does not exist (not made), a SQLite file of other tables, an empty
    database, a copy's tables without a mirror row: `holds no copy`, exit 1."""
    target = make_target(request, tmp_path, kind)
    for command in ("status", "verify"):
        done = mirror(command, "--into", target, token=None)
        assert done.returncode == 1
        assert done.stderr.endswith(" holds no copy\n"), done.stderr
    assert not Path(target).exists()
    if kind == "sqlite":
        with sqlite3.connect(target) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
        assert mirror("status", "--into", target).returncode == 1
    store = open_store(target, create=True)  # the tables, but no step committed
    assert store is not None
    store.close()
    assert mirror("status", "--into", target).returncode == 1
    assert mirror("verify", "--into", target).returncode == 1


def test_verify_recomputes_the_digest_from_every_record(target: str) -> None:
    """Records and mirror row agree: exit 0. A record changed behind the mirror's back: exit
    1 naming both digests. The row's digest changed instead: the same."""
    done = mirror("verify", "--into", target, token=None)
    assert (done.returncode, done.stdout) == (0, "generation 4: 2 origins, digest ok\n")
    changed = [RECORDS[0], {**RECORDS[1], "bans": {"allocated": False}}]
    tamper(
        target,
        "UPDATE origins SET record = ? WHERE id = ?",
        orjson.dumps(changed[1]).decode(),
        "svc:origin:2",
    )
    done = mirror("verify", "--into", target, token=None)
    assert done.returncode == 1
    assert done.stderr == (
        f"registry mirror verify: generation 4: the records held add up to digest "
        f"{digest_of(changed)}, the mirror row says {digest_of(RECORDS)}\n"
    )
    tamper(target, "UPDATE mirror SET digest = ?", digest_of(changed))
    assert mirror("verify", "--into", target, token=None).returncode == 0
