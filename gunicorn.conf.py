"""gunicorn's configuration (read by default from the working directory).

Worker class: sync, 2 x cores + 1 processes. A request is one indexed query and a little
JSON work, mostly CPU under the GIL; measured on 2 cores at 100,000 origins (wrk, 16
connections), sync workers served lookups at about 3,200 req/s with a p99 of 7 ms, while
gthread (2 or 3 processes of 4 or 8 threads) ranged from 1,200 to 2,700 req/s with p99s of
14 to 22 ms: threads only contended for the GIL. nginx in front buffers slow clients,
which is what sync workers need. Each worker has a pool of one connection (its one
request at a time), opened after the fork. REGISTRY_WORKER_CLASS and REGISTRY_THREADS
override the choice for an experiment.
"""

import multiprocessing
import os
import subprocess
import sys

bind = os.environ.get("REGISTRY_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("REGISTRY_WORKERS", multiprocessing.cpu_count() * 2 + 1))
worker_class = os.environ.get("REGISTRY_WORKER_CLASS", "sync")
threads = int(os.environ.get("REGISTRY_THREADS", "1"))
# A worker that shows no sign of life for this long is killed. Streamed exports (NDJSON,
# CSV) show one after each batch they write, so a long export runs as long as it moves,
# while one stuck behind a client that stopped reading is ended after this long.
timeout = int(os.environ.get("REGISTRY_GUNICORN_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
max_requests = 20000
max_requests_jitter = 2000
limit_request_line = 8190
limit_request_fields = 100
# nginx sends SCRIPT_NAME (the /v1 prefix) and X-Forwarded-*; only these peers are trusted.
forwarded_allow_ips = os.environ.get("REGISTRY_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = None  # the app writes one JSON line per request itself
errorlog = "-"
loglevel = os.environ.get("REGISTRY_GUNICORN_LOGLEVEL", "info")
# One control socket per user by default: several instances on a host would fight over it.
control_socket_disable = True

# A worker holds at most one connection per thread at a time; the pool needs no more.
raw_env = [f"REGISTRY_POOL_MAX_SIZE={os.environ.get('REGISTRY_POOL_MAX_SIZE', threads)}"]


def _database(worker):
    """The worker's Database (the pool holder), if its app is ours."""
    app = getattr(worker, "wsgi", None)
    return getattr(app, "extensions", {}).get("registry_db")


def post_worker_init(worker):
    """Open this worker's database pool once its app is loaded (never in the master).

    And give the app the worker's heartbeat, which a streamed export calls after each batch.
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


def on_starting(server):
    """Check the configuration in a child process, so a bad one stops with a message.

    A child, not the master itself: importing the app in the master would pin the old code
    across a HUP reload.
    """
    check = subprocess.run(
        [sys.executable, "-c", "from app import create_app; create_app()"],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        lines = [line for line in check.stderr.strip().splitlines() if line.strip()]
        print(
            f"registry: cannot start: {lines[-1] if lines else 'create_app failed'}",
            file=sys.stderr,
        )
        sys.exit(1)
