"""gunicorn's configuration (read by default from the working directory).

Worker class: sync, 2 x cores + 1 processes. A request is one indexed query and a little
JSON work, mostly CPU under the GIL; measured on 2 cores, sync workers served more lookups
a second than gthread's processes of threads (docs/performance.md, "How it is fast"):
threads only contended for the GIL. nginx in front buffers slow clients,
which is what sync workers need. Each worker has a pool of one connection (its one
request at a time), opened after the fork. The sync worker used is gunicorn's own with one
change (registry/gunicorn_worker.py): an answer's head goes out in the same write as its
body, so a worker killed mid-request leaves nginx nothing or the whole of a small answer.
REGISTRY_WORKER_CLASS and REGISTRY_THREADS override the choice for an experiment.
"""

import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from gunicorn import util
from gunicorn.http import message

from registry import settings as _settings

bind = os.environ.get("REGISTRY_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("REGISTRY_WORKERS", multiprocessing.cpu_count() * 2 + 1))
worker_class = os.environ.get(
    "REGISTRY_WORKER_CLASS", "registry.gunicorn_worker.OneWriteSyncWorker"
)
threads = int(os.environ.get("REGISTRY_THREADS", "1"))
# A gthread worker takes at most this many connections at once: as many as its threads, so a
# worker whose threads all stream exports leaves new connections in the listen queue for the
# other workers instead of taking them and making them wait behind its exports (gunicorn's
# default is 1000). Sync workers take one at a time anyway.
worker_connections = threads
# A worker that shows no sign of life for this long is killed. Streamed exports (NDJSON,
# CSV) show one while they move (a batch fetched, a write to the client under way), so a
# long export runs as long as it moves, while one stuck on a database that does not answer
# is ended after this long. Above the export send timeout (REGISTRY_EXPORT_SEND_TIMEOUT_S,
# 120 s), which ends an export whose client takes nothing for that long: a throttled curl
# takes nothing for up to 100 s between its bursts, and must not lose its worker meanwhile
# (docs/export.md, "Throttled clients"). The cost: a worker truly stuck is killed only after
# this long, and a client sending half a request straight to gunicorn holds a worker as long
# (nginx in front reads requests whole first).
# The default lives in registry/settings.py, which also refuses an export send timeout that is
# not below this one.
timeout = int(
    os.environ.get("REGISTRY_GUNICORN_TIMEOUT") or _settings.DEFAULTS["REGISTRY_GUNICORN_TIMEOUT"]
)
graceful_timeout = 20
keepalive = 5
# A worker is replaced after this many requests, a guard against slow leaks. Each replacement
# also loses what the worker learnt (its search memory, verified tokens, pooled connection
# and prepared statements), which costs most after a load: at 20,000 a busy 2-core host
# replaced every worker about every 100 s. Workers' memory is flat under the benchmarks
# (docs/performance.md, "Capacity figures"), so the guard can be rare: about an hour at
# 150 req/s.
max_requests = 500000
max_requests_jitter = 50000
# Request lines of up to 16 KB, so that 100 prefixed ids fit in one URL (docs/api.md, Requests:
# about 4.8 KB, 5.4 KB percent-encoded). gunicorn lowers any limit above its MAX_REQUEST_LINE
# (8190) to 8190, and 0 would mean none at all; its ceiling is raised to this limit instead (the
# workers fork from this process), so a longer line is still refused, with a JSON 414. Header
# fields get the same size: nginx holds both in the same buffers (deploy/nginx.conf,
# large_client_header_buffers).
limit_request_line = 16384
message.MAX_REQUEST_LINE = limit_request_line
limit_request_field_size = 16384
limit_request_fields = 100
# nginx sends SCRIPT_NAME (the /v1 prefix) and X-Forwarded-*; only these peers are trusted.
forwarded_allow_ips = os.environ.get("REGISTRY_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = None  # the app writes one JSON line per request itself
errorlog = "-"
loglevel = os.environ.get("REGISTRY_GUNICORN_LOGLEVEL", "info")
# One control socket per user by default: several instances on a host would fight over it.
control_socket_disable = True

# Prometheus metrics (registry/api/metrics.py): each worker writes its figures to files in
# PROMETHEUS_MULTIPROC_DIR, and /metrics sums them. Unset, this service uses a folder of its
# own under the state folder, one per bind address, created here, emptied when the master
# starts and removed when it exits. The variable is set before any worker imports
# prometheus_client, and survives a HUP reload (the environment is kept, so the counts are).
_DEFAULT_METRICS_DIR = (
    Path(os.environ.get("REGISTRY_STATE_DIR") or ".registry").expanduser().resolve()
    / "metrics"
    / re.sub(r"[^A-Za-z0-9.-]+", "_", bind)
)
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_DEFAULT_METRICS_DIR))

# A worker holds at most one connection per thread at a time; the pool needs no more.
# Exports (docs/export.md, Capacity): at most half of the instance's workers stream at once (at
# least one), counted across the workers through the locks of one file of this instance's own
# (registry/api/export_slots.py), so at least half of the workers always answer pages.
# Threads do not raise the limit: a worker's threads share one GIL (see above).
max_exports = os.environ.get("REGISTRY_MAX_EXPORTS") or max(1, workers // 2)
raw_env = [
    f"REGISTRY_POOL_MAX_SIZE={os.environ.get('REGISTRY_POOL_MAX_SIZE', threads)}",
    f"REGISTRY_MAX_EXPORTS={max_exports}",
    "REGISTRY_EXPORT_SLOTS_FILE="
    + os.environ.get(
        "REGISTRY_EXPORT_SLOTS_FILE",
        str(Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]) / "export-slots.lock"),
    ),
]


def write_json_error(sock, status_int, reason, mesg):
    """gunicorn's answer to a request it refuses itself, as the API's JSON error body.

    gunicorn has no setting for this page: its workers call gunicorn.util.write_error, which
    writes HTML echoing the request line. Replacing it here (the workers fork from this
    process) makes every answer JSON, direct or through nginx, and echoes nothing.
    """
    body = json.dumps({"success": False, "error": reason}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nCache-Control: no-store\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


util.write_error = write_json_error


def _database(worker):
    """The worker's Database (the pool holder), if its app is ours."""
    app = getattr(worker, "wsgi", None)
    return getattr(app, "extensions", {}).get("registry_db")


def post_worker_init(worker):
    """Open this worker's database pool once its app is loaded (never in the master).

    And give the app the worker's heartbeat, which a streamed export calls while it moves.
    """
    database = _database(worker)
    if database is not None:
        database.pool  # noqa: B018 - touching it opens it in this process
        worker.wsgi.extensions["registry_heartbeat"] = worker.notify


def worker_exit(server, worker):
    """Close this worker's pool so PostgreSQL sees the connections go."""
    database = _database(worker)
    if database is not None:
        database.close()


# Taken shared by every scrape, exclusively while a dead worker's files are folded in.
METRICS_LOCK = "compaction.lock"


def child_exit(server, worker):
    """A worker is gone (exit, crash or kill): drop its live gauges, keep its counts."""
    # Imported here, never at the top: prometheus_client picks its storage when first
    # imported, and workers forked from a master that imported it too early would not write
    # to PROMETHEUS_MULTIPROC_DIR.
    from prometheus_client import multiprocess

    from registry.api.metrics_files import lost_exports

    # An exception here would end gunicorn's main loop, master and all: log it instead (the
    # dead worker's counts are then missing from the figures, and its files stay).
    try:
        # Read before the library removes the dead worker's live gauges.
        lost = lost_exports(os.environ["PROMETHEUS_MULTIPROC_DIR"], worker.pid)
        multiprocess.mark_process_dead(worker.pid)
        _fold_dead_worker_counts(worker.pid, lost)
    except Exception:
        server.log.exception("could not fold the metrics files of worker %s", worker.pid)


def _fold_dead_worker_counts(pid, lost_exports=0.0):
    """Add a dead worker's counter and histogram files into one archive file per kind, and
    the exports it died with (still in flight) as cut with cause worker_lost.

    Workers are recycled (max_requests) and reloaded all the time, and every scrape reads every
    file: left alone, the folder would grow by two files per dead worker and scrapes would slow
    down for ever. Raw values add up (histogram buckets are stored per bucket, not cumulated);
    scrapes wait on the lock, so no scrape sees a count both in the archive and in its file.
    """
    import fcntl

    from prometheus_client.mmap_dict import MmapedDict

    from registry.api.metrics_files import file_values, is_worker_lost_cut

    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    with open(folder / METRICS_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for kind in ("counter", "histogram"):
            dead = folder / f"{kind}_{pid}.db"
            if not dead.exists():
                continue
            archive = MmapedDict(str(folder / f"{kind}_archive.db"))
            try:
                for key, value, timestamp, _ in file_values(str(dead)):
                    if lost_exports and is_worker_lost_cut(key):
                        value += lost_exports
                    current, _ = archive.read_value(key)
                    archive.write_value(key, current + value, timestamp)
            finally:
                archive.close()
            dead.unlink()


def on_exit(server):
    """Remove the metrics folder when it is this service's default one."""
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    if folder == _DEFAULT_METRICS_DIR:
        shutil.rmtree(folder, ignore_errors=True)


def _reset_metrics_folder():
    """Create the metrics folder, or empty it of an earlier run's files (the library's rule)."""
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()


def on_starting(server):
    """Reset the metrics folder; check the configuration in a child, so a bad one stops here.

    A child, not the master itself: importing the app in the master would pin the old code
    across a HUP reload. The child writes no metrics files (it is no worker).
    """
    _reset_metrics_folder()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    check = subprocess.run(
        [sys.executable, "-c", "from app import create_app; create_app()"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if check.returncode != 0:
        lines = [line for line in check.stderr.strip().splitlines() if line.strip()]
        print(
            f"registry: cannot start: {lines[-1] if lines else 'create_app failed'}",
            file=sys.stderr,
        )
        sys.exit(1)
