"""docs/export.md: an export's memory stays flat however many origins stream. One gunicorn worker
exports 5,000 origins, a fresh one 50,000 (about 43 MB of NDJSON); the larger export's peak
resident size (the kernel's VmHWM of the worker) is within a stated ratio of the smaller's.
A worker that held the whole export would grow by the export's size, about 1.7 times."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from devtools.production_stack import start_gunicorn
from registry.loader.demo import write_demo_document
from tests.conftest import TEST_SECRET, load_records, make_token
from tests.e2e.raw_http import request

pytestmark = pytest.mark.e2e

SMALL, LARGE = 5_000, 50_000
# The larger export's peak over the smaller's: batches, pieces and the allocator's slack,
# never the export itself.
FLAT_RATIO = 1.2
NDJSON = {"Authorization": f"Bearer {make_token()}", "Accept": "application/x-ndjson"}


def peak_rss_kb(pid: int) -> int:
    """The largest resident size the process has had (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def export_peak(conninfo: str, origins: int, folder: Path) -> int:
    """A fresh single-worker gunicorn over a graph of `origins`: the worker's peak resident
    size after one whole NDJSON export, read to the end."""
    with tempfile.TemporaryFile() as file:
        write_demo_document(file, origins, 7)
        file.seek(0)
        load_records(conninfo, file.read())
    server = start_gunicorn(
        {"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET},
        folder / f"gunicorn-{origins}.log",
        workers=1,
    )
    try:
        (worker,) = server.worker_pids()
        answer = request(server.port, "/registry/origins", headers=NDJSON)
        assert answer.status == 200
        assert answer.body.count(b"\n") == int(answer.header("Registry-Total") or -1) == origins
        return peak_rss_kb(worker)
    finally:
        server.stop()


def test_a_ten_times_larger_export_does_not_grow_the_worker(
    database_factory: Callable[[], str], tmp_path: Path
):
    """Peak RSS exporting 50,000 origins is within FLAT_RATIO of exporting 5,000."""
    small = export_peak(database_factory(), SMALL, tmp_path)
    large = export_peak(database_factory(), LARGE, tmp_path)
    assert large < small * FLAT_RATIO, (small, large)
