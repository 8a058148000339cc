"""The request line written directly is byte for byte what the logging path writes."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from registry.api.request_log import (
    JsonLineFormatter,
    _sole_json_handler,
    configure_json_logging,
    request_log,
    utc_millis,
    write_request_line,
)

FIELDS = {
    "request_id": "abc",
    "method": "GET",
    "path": "/registry/origins/x",
    "query": "search=news",
    "status": 200,
    "duration_ms": 1.25,
    "bytes": 512,
}


def reference_time(created: float) -> str:
    """The datetime formula the formatter used before."""
    return (
        datetime.fromtimestamp(created, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def test_utc_millis_matches_datetime() -> None:
    """Every sort of fraction, the rounding edges among them."""
    rng = random.Random(7)
    moments = [1_700_000_000 + rng.random() * 1e6 for _ in range(20_000)]
    moments += [1_700_000_000.9999995, 1_700_000_000.9994999, 1_700_000_000.0005, 0.0, 59.9999999]
    for created in moments:
        assert utc_millis(created) == reference_time(created), repr(created)


@pytest.fixture
def json_logging() -> Iterator[None]:
    """The service's logging set-up, at INFO."""
    configure_json_logging()
    logger = logging.getLogger("registry")
    level = logger.level
    logger.setLevel(logging.INFO)
    yield
    logger.setLevel(level)


@pytest.mark.usefixtures("json_logging")
def test_the_direct_line_is_the_formatters_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written directly (only our handler listens), the line equals the formatted record's."""
    # pytest listens on the root logger; as in gunicorn, only our handler may listen here.
    monkeypatch.setattr(logging.getLogger("registry"), "propagate", False)
    assert _sole_json_handler() is not None
    created = 1_763_888_999.123456
    write_request_line(FIELDS, created=created)
    direct = capsys.readouterr().err
    record = request_log.makeRecord(
        request_log.name, logging.INFO, __file__, 0, "request", (), None,
        extra={"request_fields": FIELDS},
    )  # fmt: skip
    record.created = created
    assert direct == JsonLineFormatter().format(record) + "\n"


@pytest.mark.usefixtures("json_logging")
def test_another_handler_still_sees_request_records(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """With any other handler in the way, the record goes through logging as before."""
    with caplog.at_level(logging.INFO, logger="registry.requests"):
        assert _sole_json_handler() is None
        write_request_line(FIELDS)
    assert [r.request_fields for r in caplog.records] == [FIELDS]  # type: ignore[attr-defined]
    assert '"request_id":"abc"' in capsys.readouterr().err
