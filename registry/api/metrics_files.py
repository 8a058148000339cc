"""The workers' metrics files merged into Prometheus text, cheaply enough for every scrape.

prometheus_client's MultiProcessCollector builds a Python object per sample per file and
merges those; on the 2-core hosts this service runs on that took several times longer than
the request it serves. This reads the same files (`<kind>_<pid>.db`, written by the library,
with the library's reader), adds raw values up per key, and writes the text format 0.0.4
directly. What it supports is what registry.api.metrics declares: counters, histograms and
`livesum` gauges (the library removes a dead worker's live gauge files). Each key (a JSON list
of metric, sample name, labels and help) is parsed once per process and remembered.
"""

from __future__ import annotations

import glob
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.utils import floatToGoString

KINDS = ("counter", "gauge", "histogram")


class _Key(NamedTuple):
    """One parsed file key, with what its sample line starts with."""

    metric: str
    sample: str
    labels: tuple[tuple[str, str], ...]
    help: str
    line: str
    # A histogram bucket's bound, and its labels other than le (else inf and labels).
    bound: float
    series: tuple[tuple[str, str], ...]


_KEYS: dict[str, _Key] = {}


def _parse(key: str) -> _Key:
    """A file key, parsed once per process."""
    found = _KEYS.get(key)
    if found is None:
        metric, sample, labels, help_text = json.loads(key)
        pairs = tuple(sorted(labels.items()))
        le = labels.get("le")
        bound = math.inf if le is None or le == "+Inf" else float(le)
        series = tuple(pair for pair in pairs if pair[0] != "le")
        found = _KEYS[key] = _Key(
            metric, sample, pairs, help_text, sample + _labels(pairs), bound, series
        )
    return found


def _escape(value: str) -> str:
    """A label value escaped for the text format."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    """{name="value",...}, or nothing without labels."""
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in labels) + "}"


def _help(text: str) -> str:
    """A HELP text escaped for the text format."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def file_values(path: str) -> Iterable[tuple[str, float, float, int]]:
    """Every (key, value, timestamp, position) of one worker's file, read with the library's
    reader; none from a file that is not set up yet or is gone.

    The library creates a file empty, then sizes it and writes its header: a scrape, or a
    worker killed in between, finds it empty, which the library's reader cannot read (and in
    the master's child_exit hook that took gunicorn itself down). A dead worker's live gauge
    files are removed by the library without the scrapes' lock.
    """
    try:
        if os.path.getsize(path) < 8:  # the header: how many bytes are in use
            return []
        values: Iterable[tuple[str, float, float, int]]
        values = MmapedDict.read_all_values_from_file(path)
        return values
    except FileNotFoundError:
        return []


# A worker that dies with exports in flight cannot count them as cut: gunicorn's master does,
# from the worker's live gauge, before the library removes it (gunicorn.conf.py, child_exit).
EXPORTS_IN_FLIGHT = "registry_exports_in_flight"
EXPORTS_CUT = "registry_exports_cut_total"
WORKER_LOST = "worker_lost"


def lost_exports(folder: str, pid: int) -> float:
    """The exports the dead worker pid still had in flight (its live gauge; 0 without one)."""
    path = os.path.join(folder, f"gauge_livesum_{pid}.db")
    return sum(
        value for key, value, _, _ in file_values(path) if _parse(key).sample == EXPORTS_IN_FLIGHT
    )


def is_worker_lost_cut(key: str) -> bool:
    """Whether a counter file's key is registry_exports_cut_total{cause="worker_lost"}."""
    parsed = _parse(key)
    return parsed.sample == EXPORTS_CUT and parsed.labels == (("cause", WORKER_LOST),)


def merged_text(folder: str) -> bytes:
    """Every worker's figures in folder, summed, as Prometheus text format 0.0.4."""
    totals: dict[str, float] = defaultdict(float)
    kinds: dict[str, str] = {}
    for path in glob.glob(os.path.join(folder, "*.db")):
        kind = os.path.basename(path).split("_", 1)[0]
        if kind not in KINDS:
            continue
        for key, value, _timestamp, _position in file_values(path):
            totals[key] += value
            kinds[key] = kind
    metrics: dict[str, list[tuple[_Key, float]]] = defaultdict(list)
    metric_kinds: dict[str, str] = {}
    for key, value in totals.items():
        parsed = _parse(key)
        metrics[parsed.metric].append((parsed, value))
        metric_kinds[parsed.metric] = kinds[key]
    lines: list[str] = []
    for metric in sorted(metrics):
        samples = metrics[metric]
        kind = metric_kinds[metric]
        lines.append(f"# HELP {metric} {_help(samples[0][0].help)}")
        lines.append(f"# TYPE {metric} {kind}")
        if kind == "histogram":
            lines.extend(_histogram_lines(metric, samples))
        else:
            for parsed, value in sorted(samples, key=lambda item: item[0].labels):
                lines.append(f"{parsed.line} {floatToGoString(value)}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _histogram_lines(metric: str, samples: list[tuple[_Key, float]]) -> list[str]:
    """Cumulative buckets, then _count (the +Inf bucket) and _sum, per label set."""
    buckets: dict[tuple[tuple[str, str], ...], list[tuple[float, str, float]]] = defaultdict(list)
    sums: dict[tuple[tuple[str, str], ...], float] = {}
    for parsed, value in samples:
        if parsed.sample.endswith("_bucket"):
            buckets[parsed.series].append((parsed.bound, parsed.line, value))
        elif parsed.sample.endswith("_sum"):
            sums[parsed.series] = value
    lines = []
    for series in sorted(buckets):
        running = 0.0
        for _bound, line, value in sorted(buckets[series]):
            running += value
            lines.append(f"{line} {floatToGoString(running)}")
        labels = _labels(series)
        lines.append(f"{metric}_count{labels} {floatToGoString(running)}")
        lines.append(f"{metric}_sum{labels} {floatToGoString(sums.get(series, 0.0))}")
    return lines
