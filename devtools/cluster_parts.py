"""The parts of the loopback cluster (devtools.cluster): PostgreSQL servers and PgBouncers,
each started from the machine's binaries as an operator would start it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from devtools.production_stack import (
    REPO,
    stop_process,
    wait_for_port,
)
from registry.database.embedded import server_bin_dir

SUPERUSER = "postgres"
READER = "registry_reader"
DATABASE = "registry"
TOOLS = ("initdb", "pg_ctl", "pg_basebackup", "postgres")


def postgres_bindir() -> Path:
    """Where initdb, pg_ctl and pg_basebackup are: the machine's PostgreSQL, else the embedded one.

    The machine's binaries come first: they are the PostgreSQL that operators run and that
    CI's second phase tests against; the embedded default's make the cluster
    work on a machine with nothing but Python.
    """
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip():
            candidates.append(Path(found.stdout.strip()))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [path for path in debian.iterdir() if path.name.isdigit()]
        for version in sorted(versions, key=lambda path: int(path.name), reverse=True):
            candidates.append(version / "bin")
    candidates.append(server_bin_dir())
    for folder in candidates:
        if all((folder / tool).exists() for tool in TOOLS):
            return folder
    raise RuntimeError("no PostgreSQL binaries with initdb, pg_ctl and pg_basebackup found")


def pgbouncer_binary() -> str | None:
    """Debian's pgbouncer, if installed."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/sbin")


def service_user() -> str | None:
    """The user PostgreSQL and PgBouncer run as: neither runs as root, so root lends one."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "embedded_postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root, and no user to run PostgreSQL as")


def own_path(path: Path, user: str | None) -> None:
    """Make a folder (new or empty) belong to the service user."""
    path.mkdir(parents=True, exist_ok=True)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


# -- PostgreSQL ------------------------------------------------------------------------------


@dataclass
class PostgresServer:
    """One PostgreSQL server of the cluster, run with pg_ctl as the service user."""

    name: str
    bindir: Path
    pgdata: Path
    port: int
    user: str | None

    @property
    def url(self) -> str:
        """The superuser's URL of the registry database on this server alone."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def admin_url(self) -> str:
        """The superuser's URL of the postgres database on this server."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def run(self, tool: str, *args: str, timeout: float = 120) -> None:
        """Run a PostgreSQL tool as the service user; its output goes to a file, not a pipe."""
        with tempfile.TemporaryFile() as output:
            result = subprocess.run(
                [str(self.bindir / tool), *args],
                user=self.user,
                cwd=self.pgdata.parent,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
            if result.returncode != 0:
                output.seek(0)
                message = output.read().decode(errors="replace")
                raise RuntimeError(f"{self.name}: {tool} {' '.join(args)} failed:\n{message}")

    def configure(self, **settings: str) -> None:
        """Append settings to postgresql.conf (later lines win over earlier ones)."""
        lines = "".join(f"{name} = {value}\n" for name, value in settings.items())
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write(f"\n# the cluster's own settings\n{lines}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.run("pg_ctl", "-D", str(self.pgdata), "-l", str(self.log_path), "-w", "-t", "60",
                 "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (fast: sessions are cut, as in an outage), if it runs."""
        if (self.pgdata / "postmaster.pid").exists():
            self.run("pg_ctl", "-D", str(self.pgdata), "-w", "-t", "60", "-m", mode, "stop")

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.pgdata.parent / f"{self.name}.log"

    def connect(self, dbname: str = DATABASE) -> psycopg.Connection:
        """An autocommit superuser connection to this server alone."""
        url = self.url if dbname == DATABASE else self.admin_url
        return psycopg.connect(url, autocommit=True, connect_timeout=5)


def server_settings(port: int) -> dict[str, str]:
    """What both servers run with: loopback only, no Unix socket, replication on."""
    return {
        "port": str(port),
        "listen_addresses": "'127.0.0.1'",
        "unix_socket_directories": "''",
        "wal_level": "replica",
        "max_wal_senders": "5",
        "max_connections": "100",
        "shared_buffers": "64MB",
        "hot_standby": "on",
        # The standby tells the primary which rows its queries still see, so replaying a
        # vacuum never cancels a read there.
        "hot_standby_feedback": "on",
        # A replayed drop of a generation waits for the reads still inside it instead of
        # cancelling them after 30 s: an export on the standby is never cut by a load
        # (docs/export.md, Capacity). Page statements end within statement_timeout; while an export
        # holds replay back the standby lags, and unpinned reads go to the primary past
        # REGISTRY_MAX_REPLICA_LAG_S (docs/scaling.md).
        "max_standby_streaming_delay": "-1",
        "logging_collector": "off",
    }


# -- PgBouncer -------------------------------------------------------------------------------


@dataclass
class PgBouncer:
    """Debian's pgbouncer in transaction pooling mode in front of one PostgreSQL server."""

    name: str
    folder: Path
    port: int
    server_port: int
    user: str | None
    process: subprocess.Popen | None = None

    @property
    def ini(self) -> Path:
        """Its configuration file."""
        return self.folder / "pgbouncer.ini"

    def write_config(self) -> None:
        """deploy/pgbouncer.ini's settings, pointed at this server and folder."""
        own_path(self.folder, self.user)
        self.ini.write_text(render_pgbouncer_ini(self.folder, self.port, self.server_port))
        (self.folder / "userlist.txt").write_text(f'"{SUPERUSER}" ""\n"{READER}" ""\n')

    def start(self) -> None:
        """Start it in the foreground (as the service user) and wait until it listens."""
        binary = pgbouncer_binary()
        if binary is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        with open(self.folder / "pgbouncer.out", "ab") as out:
            self.process = subprocess.Popen(
                [binary, str(self.ini)],
                user=self.user,
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.port, self.process, f"pgbouncer {self.name}")

    def stop(self) -> None:
        """Stop it at once (SIGTERM: immediate shutdown, clients are cut)."""
        if self.process is not None:
            stop_process(self.process)
            self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port, as `systemctl restart pgbouncer` does."""
        self.stop()
        self.start()


def render_pgbouncer_ini(folder: Path, port: int, server_port: int) -> str:
    """deploy/pgbouncer.ini with its listen port, server port and paths set for this run."""
    text = (REPO / "deploy" / "pgbouncer.ini").read_text()
    replacements = {
        "listen_port = 6432": f"listen_port = {port}",
        "host=127.0.0.1 port=5432": f"host=127.0.0.1 port={server_port}",
        "/etc/pgbouncer/userlist.txt": str(folder / "userlist.txt"),
        "/var/log/postgresql/pgbouncer.log": str(folder / "pgbouncer.log"),
        "/var/run/postgresql/pgbouncer.pid": str(folder / "pgbouncer.pid"),
        "unix_socket_dir = /var/run/postgresql": "unix_socket_dir =",
    }
    for old, new in replacements.items():
        if old not in text:
            raise RuntimeError(f"deploy/pgbouncer.ini: expected {old!r}")
        text = text.replace(old, new)
    return text
