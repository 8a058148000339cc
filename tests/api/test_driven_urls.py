"""The URLs that `make loadtest` and `make faulttest` drive through nginx are all answered.

Those runs check every URL once before they start and stop at the first one that is not a
200. Two rows of `make bench` are not for them: `/query`, which only the ceiling app serves,
and `/metrics`, which deploy/nginx.conf answers 404; driving them once made both runs stop
before any load. This keeps the list and the service in step on every CI run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devtools.bench_targets import NOT_THROUGH_NGINX, pick_targets, public_urls, urls

NGINX_CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"


def test_every_url_the_load_tests_drive_answers_200(
    example_db: str, client: Any, admin_headers: dict[str, str]
) -> None:
    for key, _, path in public_urls(pick_targets(example_db)):
        answer = client.get(path, headers=admin_headers)
        assert answer.status_code == 200, (key, path, answer.get_data()[:200])


def test_what_they_leave_out_is_what_nginx_does_not_pass_or_the_service_does_not_serve(
    client: Any, admin_headers: dict[str, str]
) -> None:
    targets = {
        "total": 1,
        "network_id": "n",
        "origin_id": "o",
        "address": "1.1.1",
        "changes": 1,
        "previous": None,
        "changed_id": "o",
    }
    left_out = {key: path for key, _, path in urls(targets)}
    for key, _, _ in public_urls(targets):
        left_out.pop(key)
    assert set(left_out) == NOT_THROUGH_NGINX
    assert client.get(left_out["ceiling-query"], headers=admin_headers).status_code == 404
    assert f"location = /v1{left_out['metrics']} {{\n        return 404;" in NGINX_CONF.read_text()
