"""From DATABASE_URL to connections: multi-host reads and writes, and PgBouncer mode."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from registry.database.conninfo import (
    connection_kwargs,
    is_multi_host,
    prefers_standby,
    reader_conninfo,
    standby_conninfo,
    without_host,
    writer_conninfo,
)
from registry.settings import SettingsError, load_settings, settings_from_environ

MULTI = "postgresql://reader@db1:5432,db2:5433/registry"


@pytest.mark.parametrize(
    ("url", "multi"),
    [
        (MULTI, True),
        ("host=db1,db2 port=5432,5433 dbname=registry", True),
        ("postgresql://reader@db1/registry", False),
        ("host=/var/run/postgresql dbname=registry", False),
    ],
)
def test_is_multi_host(url: str, multi: bool):
    """Several hosts in a URI or in key=value form."""
    assert is_multi_host(url) is multi


def test_reads_prefer_standbys_and_spread_over_them():
    """A multi-host URL gets prefer-standby and random load balancing."""
    params = conninfo_to_dict(reader_conninfo(MULTI))
    assert params["host"] == "db1,db2"
    assert params["port"] == "5432,5433"
    assert params["target_session_attrs"] == "prefer-standby"
    assert params["load_balance_hosts"] == "random"


def test_a_url_that_chooses_keeps_its_choice():
    """An operator's own target_session_attrs and load_balance_hosts win for reads."""
    url = MULTI + "?target_session_attrs=any&load_balance_hosts=disable"
    params = conninfo_to_dict(reader_conninfo(url))
    assert params["target_session_attrs"] == "any"
    assert params["load_balance_hosts"] == "disable"


@pytest.mark.parametrize(
    ("url", "prefers"),
    [
        (MULTI, True),
        (MULTI + "?target_session_attrs=any", False),
        (MULTI + "?target_session_attrs=standby", False),
        ("postgresql://reader@db1/registry", False),
    ],
)
def test_reads_fall_back_to_a_primary_only_under_prefer_standby(url: str, prefers: bool):
    """Only prefer-standby puts a read on a primary for want of a standby (and then the
    service waits for a standby to come back)."""
    assert prefers_standby(reader_conninfo(url)) is prefers


def test_the_wait_for_a_standby_asks_the_same_hosts_for_a_standby_only():
    """The probe connection: every host of the URL, target_session_attrs=standby."""
    params = conninfo_to_dict(standby_conninfo(reader_conninfo(MULTI)))
    assert params["host"] == "db1,db2"
    assert params["port"] == "5432,5433"
    assert params["target_session_attrs"] == "standby"
    assert params["dbname"] == "registry"


def test_one_host_is_left_as_it_is():
    """A single-host URL is not touched."""
    url = "postgresql://reader@db1/registry"
    assert reader_conninfo(url) == url


@pytest.mark.parametrize(
    "given", ["", "?target_session_attrs=prefer-standby", "?target_session_attrs=any"]
)
def test_writes_go_to_the_primary_whatever_the_url_says(given: str):
    """Loads, migrations and create-reader: the primary, always."""
    params = conninfo_to_dict(writer_conninfo(MULTI + given))
    assert params["target_session_attrs"] == "primary"
    assert params["host"] == "db1,db2"


def test_session_settings_travel_as_options_without_pgbouncer():
    """Directly to PostgreSQL: the startup options carry the session settings."""
    kwargs = connection_kwargs(load_settings({"REGISTRY_STATEMENT_TIMEOUT_MS": 1234}), MULTI)
    assert "statement_timeout=1234" in kwargs["options"]
    assert "default_transaction_read_only=on" in kwargs["options"]
    assert "prepare_threshold" not in kwargs


def test_pgbouncer_mode_prepares_nothing_and_sends_no_options():
    """Through PgBouncer in transaction mode: no prepared statements, no startup options."""
    kwargs = connection_kwargs(load_settings({"REGISTRY_PGBOUNCER": True}), MULTI)
    assert kwargs["prepare_threshold"] is None
    assert "options" not in kwargs


def test_the_pgbouncer_setting_is_a_boolean():
    """REGISTRY_PGBOUNCER reads like every other switch."""
    assert settings_from_environ({"REGISTRY_PGBOUNCER": "1"})["REGISTRY_PGBOUNCER"] is True
    assert settings_from_environ({"REGISTRY_PGBOUNCER": "off"})["REGISTRY_PGBOUNCER"] is False
    with pytest.raises(SettingsError):
        settings_from_environ({"REGISTRY_PGBOUNCER": "maybe"})


def test_without_host_leaves_out_one_host_and_its_port():
    """A host that did not answer is left out; the rest keep their ports and parameters."""
    url = "postgresql://reader@127.0.0.1:6432,127.0.0.1:6433/registry?target_session_attrs=standby"
    params = conninfo_to_dict(without_host(url, "127.0.0.1", 6432) or "")
    assert params["host"] == "127.0.0.1"
    assert params["port"] == "6433"
    assert params["target_session_attrs"] == "standby"
    assert without_host("postgresql://reader@db1:5432/registry", "db1", 5432) is None
    same_port = conninfo_to_dict(without_host("host=db1,db2 port=5432", "db2", 5432) or "")
    assert (same_port["host"], same_port["port"]) == ("db1", "5432")
