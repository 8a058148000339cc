"""registry.api.metrics_files against prometheus_client's own merge, on real worker files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from registry.api.metrics_files import merged_text

# One "worker": its own process, writing to the folder as gunicorn's workers do.
WORKER = """
import sys
from prometheus_client import Counter, Gauge, Histogram
n = int(sys.argv[1])
requests = Counter("t_requests", "Requests \\\\ with a backslash.", ("route", "status"))
duration = Histogram("t_duration_seconds", "Durations.", ("route",), buckets=(0.001, 0.01, 1))
in_use = Gauge("t_in_use", "Live gauge.", multiprocess_mode="livesum")
for i in range(n):
    requests.labels("/a/<id>", "200").inc()
    requests.labels('odd "quoted"\\\\ \\n route', "404").inc(0.5)
    duration.labels("/a/<id>").observe(0.0005 * i)
in_use.set(n)
"""


def families(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text exposition, by name and labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_merged_text_equals_the_librarys_merge(tmp_path: Path) -> None:
    """Counters, histograms (cumulated) and livesum gauges, escaped labels, three processes."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for n in (3, 5, 40):
        subprocess.run([sys.executable, "-c", WORKER, str(n)], env=env, check=True)
    library = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(library, path=str(tmp_path))
    expected = families(generate_latest(library).decode())
    ours = merged_text(str(tmp_path)).decode()
    assert families(ours) == expected
    assert expected[("t_requests_total", (("route", "/a/<id>"), ("status", "200")))] == 48
    assert expected[("t_duration_seconds_count", (("route", "/a/<id>"),))] == 48
    assert expected[("t_in_use", ())] == 48
    assert "# TYPE t_duration_seconds histogram" in ours
    assert "# HELP t_requests Requests \\\\ with a backslash." in ours


def test_an_empty_folder_is_an_empty_answer(tmp_path: Path) -> None:
    """No worker has written yet: nothing to say."""
    assert merged_text(str(tmp_path)) == b""


def test_a_file_not_set_up_yet_reads_as_nothing(tmp_path: Path) -> None:
    """The library creates a worker's file empty and sizes it a moment later: a scrape in
    between (or after the worker was killed in between) adds nothing for it and fails not."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", WORKER, "3"], env=env, check=True)
    before = merged_text(str(tmp_path))
    for kind in ("counter", "histogram", "gauge_livesum"):
        (tmp_path / f"{kind}_424242.db").touch()
    assert merged_text(str(tmp_path)) == before != b""


# gunicorn's child_exit hook, as the master runs it for a dead worker (in a child process:
# gunicorn.conf.py sets environment variables, and prometheus_client reads them at import).
CHILD_EXIT = """
import runpy, sys, types
conf = runpy.run_path("gunicorn.conf.py")
logged = []
server = types.SimpleNamespace(log=types.SimpleNamespace(exception=lambda *a: logged.append(a)))
for pid in sys.argv[1:]:
    conf["child_exit"](server, types.SimpleNamespace(pid=int(pid)))
print(len(logged))
"""


def child_exit(folder: Path, *pids: int) -> int:
    """Run gunicorn.conf.py's child_exit for these dead workers; how many errors it logged."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD_EXIT, *map(str, pids)],
        cwd=root, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(done.stdout.strip())


def test_a_worker_killed_before_its_files_were_set_up_is_folded_in(tmp_path: Path) -> None:
    """Its empty files are folded in (as nothing) and removed; the others' counts stay. Before,
    the library's reader raised in the hook and gunicorn's master exited with status 255."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", WORKER, "3"], env=env, check=True)
    before = merged_text(str(tmp_path))
    for kind in ("counter", "histogram"):
        (tmp_path / f"{kind}_424242.db").touch()
    assert child_exit(tmp_path, 424242) == 0
    assert not list(tmp_path.glob("*_424242.db"))
    assert merged_text(str(tmp_path)) == before


def test_a_failure_in_the_child_exit_hook_is_logged_not_raised(tmp_path: Path) -> None:
    """A corrupt file cannot be folded in: the hook logs it and returns, so gunicorn's main
    loop goes on (an exception there ends the master, and with it every worker)."""
    header = (64).to_bytes(4, sys.byteorder) + bytes(4)  # 64 bytes in use ...
    entry = (200).to_bytes(4, sys.byteorder) + b"x" * 52  # ... and a key longer than that
    (tmp_path / "counter_424243.db").write_bytes(header + entry)
    assert child_exit(tmp_path, 424243) == 1
