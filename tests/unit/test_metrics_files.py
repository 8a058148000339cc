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
