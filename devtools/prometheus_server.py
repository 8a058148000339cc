"""A real Prometheus (Debian's `prometheus` package) scraping a gunicorn, for end-to-end tests.

It runs deploy/prometheus.yml's scrape job as it ships, with only the target, the intervals
and the rule file's path pointed at this run, and its storage in a temporary folder.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from devtools.production_stack import REPO, free_port, stop_process, wait_for_port

SCRAPE_CONFIG = REPO / "deploy" / "prometheus.yml"
ALERTS = REPO / "deploy" / "alerts.yml"


def prometheus_binary() -> str | None:
    """The prometheus executable on PATH, if there is one."""
    return shutil.which("prometheus")


def render_config(target: str, scrape_interval: str = "1s") -> dict[str, Any]:
    """deploy/prometheus.yml aimed at target, scraping every scrape_interval."""
    config = yaml.safe_load(SCRAPE_CONFIG.read_text())
    config["global"]["scrape_interval"] = scrape_interval
    config["global"]["evaluation_interval"] = scrape_interval
    config["global"]["scrape_timeout"] = scrape_interval
    config["rule_files"] = [str(ALERTS)]
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "registry"]
    job["static_configs"][0]["targets"] = [target]
    return config


@dataclass
class Prometheus:
    """A running Prometheus and its HTTP API."""

    port: int
    process: subprocess.Popen
    log_path: Path

    @property
    def base(self) -> str:
        """Its URL, no trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>: the `data` of a successful answer."""
        url = f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = orjson.loads(answer.read())
        if body.get("status") != "success":
            raise RuntimeError(f"Prometheus answered {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        data = self.api("query", query=promql)
        return list(data["result"])

    def output(self) -> str:
        """What Prometheus logged."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """Stop it (SIGTERM: a clean shutdown)."""
        stop_process(self.process)


def start_prometheus(folder: Path, target: str, scrape_interval: str = "1s") -> Prometheus:
    """Prometheus scraping target (host:port), its data under folder; returns once ready."""
    binary = prometheus_binary()
    if binary is None:
        raise RuntimeError("prometheus is not installed (Debian: apt-get install prometheus)")
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump(render_config(target, scrape_interval)))
    port = free_port()
    log_path = folder / "prometheus.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Prometheus(port, process, log_path)
    try:
        wait_for_port(port, process, "prometheus")
        _wait_ready(server)
    except BaseException:
        stop_process(process)
        raise
    return server


def _wait_ready(server: Prometheus, seconds: float = 60) -> None:
    """Poll /-/ready until Prometheus says it is ready."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"prometheus exited:\n{server.output()}")
        try:
            with urllib.request.urlopen(server.base + "/-/ready", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"prometheus was not ready within {seconds} s:\n{server.output()}")
