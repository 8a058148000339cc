"""gunicorn's configuration (read by default from the working directory).

Worker class: sync. Every request is a few milliseconds of one indexed query plus JSON
encoding, which is CPU work under the GIL; threads would add contention, not throughput.
nginx in front buffers slow clients, which is what sync workers need. Workers: 2 x cores + 1,
the usual figure for short CPU-and-database requests, each with its own small pool.
"""

import multiprocessing
import os

bind = os.environ.get("REGISTRY_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("REGISTRY_WORKERS", multiprocessing.cpu_count() * 2 + 1))
worker_class = "sync"
timeout = 30
graceful_timeout = 20
keepalive = 5
max_requests = 20000
max_requests_jitter = 2000
limit_request_line = 8190
limit_request_fields = 100
forwarded_allow_ips = os.environ.get("REGISTRY_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = None
errorlog = "-"
loglevel = os.environ.get("REGISTRY_GUNICORN_LOGLEVEL", "info")


def post_fork(server, worker):
    """Open this worker's database pool after the fork (never in the master)."""
    app = getattr(worker, "wsgi", None)
    database = getattr(app, "extensions", {}).get("registry_db") if app else None
    if database is not None:
        database.pool  # noqa: B018 - touching it opens it in this process


def worker_exit(server, worker):
    """Close this worker's pool so PostgreSQL sees the connections go."""
    app = getattr(worker, "wsgi", None)
    database = getattr(app, "extensions", {}).get("registry_db") if app else None
    if database is not None:
        database.close()


def on_starting(server):
    """Check the configuration once in the master, so a bad one stops with a message."""
    import sys

    from app import create_app
    from registry.settings import SettingsError

    try:
        create_app()
    except SettingsError as error:
        print(f"registry: cannot start: {error}", file=sys.stderr)
        sys.exit(1)
