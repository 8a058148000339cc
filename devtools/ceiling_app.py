"""The ceiling `make bench` measures against: a minimal Flask app answering a small JSON dict.

Served through the same gunicorn.conf.py as the service, in the same run, so each URL's rate
can be read as a ratio to what Flask and gunicorn alone reach on this machine at this moment.
"""

from __future__ import annotations

import os

import psycopg
from flask import Flask

app = Flask(__name__)
# /query: one plain connection per worker, opened on first use (the workers are forked).
_connection: list[psycopg.Connection] = []


@app.get("/")
def ceiling() -> dict[str, object]:
    """A small JSON dict, about the size of /summary's answer."""
    return {"success": True, "service": "ceiling", "connected": True, "networks": 1}


@app.get("/healthz")
def healthz() -> dict[str, str]:
    """What start_gunicorn polls before it returns."""
    return {"status": "ok"}


@app.get("/query")
def query() -> dict[str, object]:
    """The same dict after one round trip to PostgreSQL: the statement a 304 runs.

    What any answer that asks the database once costs at least, with none of the service's
    own work (token, generations, schemas, pool, request log) around it.
    """
    if not _connection:
        _connection.append(psycopg.connect(os.environ["DATABASE_URL"], autocommit=True))
    row = _connection[0].execute("SELECT generation, committed_at FROM graph.graph_info").fetchone()
    generation = row[0] if row else None
    return {"success": True, "service": "ceiling", "connected": True, "networks": generation}
