"""The ceiling `make bench` measures against: a minimal Flask app answering a small JSON dict.

Served through the same gunicorn.conf.py as the service, in the same run, so each URL's rate
can be read as a ratio to what Flask and gunicorn alone reach on this machine at this moment.
"""

from __future__ import annotations

from flask import Flask

app = Flask(__name__)


@app.get("/")
def ceiling() -> dict[str, object]:
    """A small JSON dict, about the size of /summary's answer."""
    return {"success": True, "service": "ceiling", "connected": True, "networks": 1}


@app.get("/healthz")
def healthz() -> dict[str, str]:
    """What start_gunicorn polls before it returns."""
    return {"status": "ok"}
