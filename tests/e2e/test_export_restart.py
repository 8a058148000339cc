"""docs/export.md, Capacity: an export cut by a database restart never looks complete, direct and
through deploy/nginx.conf, and the service answers again once the database is back. A PostgreSQL of
the test's own, so that it can be restarted."""

from __future__ import annotations

import pytest

from devtools.production_stack import PrivatePostgres, start_gunicorn, start_nginx
from tests.conftest import TEST_SECRET, load_records
from tests.e2e.capacity_stack import (
    ADMIN,
    NDJSON,
    ORIGINS,
    WORKERS,
    demo_document,
    wait_for,
)
from tests.e2e.raw_http import request
from tests.e2e.slow_client import SlowClient

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx_installed")]


def test_an_export_cut_by_a_database_restart_never_looks_complete(
    tmp_path_factory: pytest.TempPathFactory,
):
    """The database restarts while an export waits on its reader: direct and through nginx
    (its spool off, so the worker is mid-export), the body ends without its last chunk and
    short of Registry-Total, and the service answers again once the database is back."""
    folder = tmp_path_factory.mktemp("restart")
    postgres = PrivatePostgres(folder / "state")
    postgres.start()
    try:
        load_records(postgres.url, demo_document(ORIGINS, 3))
        server = start_gunicorn(
            {"DATABASE_URL": postgres.url, "REGISTRY_JWT_SECRET": TEST_SECRET},
            folder / "gunicorn.log",
            workers=WORKERS,
        )
        try:
            proxy = start_nginx(folder / "nginx", server.port, spool_limit="0")
            try:
                for port, target in (
                    (server.port, "/registry/origins"),
                    (proxy.port, "/v1/registry/origins"),
                ):
                    client = SlowClient(port, target, NDJSON)
                    for _ in range(WORKERS):
                        # A worker that has not served since the restart finds its pooled
                        # connection gone: one JSON 503 (docs/api.md, Errors), then it answers.
                        if client.status != 503:
                            break
                        client.read_rest()
                        client = SlowClient(port, target, NDJSON)
                    assert client.status == 200
                    total = int(client.head["registry-total"])
                    client.read_for(0.5)
                    postgres.stop(mode="fast")
                    postgres.start()
                    body = client.read_rest()
                    assert not body.complete
                    assert len(body.lines()) < total == ORIGINS
                    wait_for(
                        lambda: (
                            request(server.port, "/registry/summary", headers=ADMIN).status == 200
                        ),
                        "the service answering after the restart",
                    )
            finally:
                proxy.stop()
        finally:
            server.stop()
    finally:
        postgres.stop(mode="immediate")
