"""The production set-up on loopback, for the end-to-end tests and `make loadtest`/`faulttest`.

Three parts, each started as operators start it and stopped cleanly:

- gunicorn: `gunicorn wsgi:app` from the repository root, configured by gunicorn.conf.py, its
  output in a file (a pipe nobody reads would fill up with request lines and block workers);
- nginx: deploy/nginx.conf as it ships, with only the upstream, listen and access-log lines
  pointed at this run, wrapped in a minimal main configuration under a temporary prefix and
  run in the foreground;
- a private PostgreSQL (devtools/private_postgres.py): the embedded server under a state
  folder of its own, which can be stopped and started again without touching any server
  someone else uses.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.private_postgres import PrivatePostgres

__all__ = ["PrivatePostgres"]  # its own module; named here for the importers of the three parts

REPO = Path(__file__).resolve().parent.parent
NGINX_SITE = REPO / "deploy" / "nginx.conf"
PREFIX = "/v1"


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen, what: str, seconds: float = 30) -> None:
    """Wait until something accepts connections on port, failing early if process died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {seconds} s")


def stop_process(process: subprocess.Popen, seconds: float = 30) -> None:
    """SIGTERM (a graceful stop for gunicorn and nginx), then SIGKILL if it will not go."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- gunicorn --------------------------------------------------------------------------------


@dataclass
class Gunicorn:
    """A running `gunicorn wsgi:app` and where to reach it."""

    port: int
    process: subprocess.Popen
    log_path: Path

    @property
    def base(self) -> str:
        """Its URL, no trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """Everything it has printed so far."""
        return self.log_path.read_text(errors="replace")

    def worker_pids(self) -> set[int]:
        """The process ids of its workers now."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return {int(pid) for pid in children.read_text().split()}

    def stop(self) -> str:
        """Stop it gracefully and return what it printed."""
        stop_process(self.process)
        return self.output()


def start_gunicorn(
    env_extra: dict[str, str],
    log_path: Path,
    workers: int | None = None,
    port: int | None = None,
    app: str = "wsgi:app",
    code: Path = REPO,
) -> Gunicorn:
    """gunicorn wsgi:app (or another app) from the repository root (or from code, another
    checkout of it) on port (a free one by default); returns once it answers."""
    listener: socket.socket | None = None
    if port is None:
        # No free port looked up and let go (another process could take it before gunicorn
        # binds, and a health check would then reach that one): gunicorn is handed a socket
        # already listening (`fd://N`), with a metrics folder of its own, since the folder
        # gunicorn.conf.py would derive from the bind would be the same for every instance.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # As gunicorn sets on its own sockets: connections it accepted inherit the flag, and
        # without it their TIME_WAIT would stop a restart on this port (a host that came back).
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(2048)
        listener.set_inheritable(True)
        port = int(listener.getsockname()[1])
        bind = f"fd://{listener.fileno()}"
        env_extra = {
            "PROMETHEUS_MULTIPROC_DIR": str(log_path.parent / f"metrics-{port}"),
            **env_extra,
        }
    else:
        bind = f"127.0.0.1:{port}"
    env = {**os.environ, "REGISTRY_BIND": bind, **env_extra}
    if code != REPO:
        env["PYTHONPATH"] = str(code)
    if workers is not None:
        env["REGISTRY_WORKERS"] = str(workers)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", app],
                cwd=code,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=() if listener is None else (listener.fileno(),),
            )
    finally:
        if listener is not None:
            listener.close()  # gunicorn holds its own copy
    server = Gunicorn(port, process, log_path)
    try:
        wait_for_port(port, process, "gunicorn", seconds=60)
        _wait_for_http(server.base + "/healthz", process)
        if workers is not None:
            _wait_for_workers(server, workers)
    except BaseException:
        stop_process(process)
        raise
    return server


def _wait_for_workers(server: Gunicorn, count: int, seconds: float = 60) -> None:
    """Wait until gunicorn has booted all its workers (the first one answers before the rest)."""
    deadline = time.monotonic() + seconds
    while len(server.worker_pids()) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not boot {count} workers within {seconds} s")
        time.sleep(0.05)


def _wait_for_http(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    """Poll url until it answers 200, failing early if the server died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer 200 within {seconds} s")


# -- nginx -----------------------------------------------------------------------------------


def nginx_binary() -> str | None:
    """The nginx executable on PATH (or Debian's /usr/sbin/nginx), if there is one."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")


def _replace_once(text: str, pattern: str, replacement: str) -> str:
    """Replace the one line matching pattern; fail loudly if the file no longer has it."""
    result, count = re.subn(pattern, replacement, text, flags=re.M)
    if count != 1:
        raise RuntimeError(f"deploy/nginx.conf: expected one line matching {pattern!r}")
    return result


@dataclass(frozen=True)
class ClientLimits:
    """deploy/nginx.conf's limits per client address: request rate and burst, exports."""

    rate_per_s: int
    burst: int
    exports: int


# Every request of a load test or a benchmark comes from one loopback address: the limits
# per client would refuse them, so this harness lifts them unless a test asks for its own.
LIFTED = ClientLimits(rate_per_s=1_000_000, burst=1_000_000, exports=10_000)


def render_site(
    upstream_ports: int | Sequence[int],
    listen_port: int,
    access_log: str,
    limits: ClientLimits | None = LIFTED,
    spool_limit: str | None = None,
) -> str:
    """deploy/nginx.conf with its upstream, listen and access-log lines pointed at this run,
    its limits per client set to limits (None: as shipped), and the most of one answer it
    spools to disk set to spool_limit (None: as shipped).

    The upstream's `server` lines become one per port, each with the parameters (max_fails,
    fail_timeout) of the file's first one.
    """
    ports = [upstream_ports] if isinstance(upstream_ports, int) else list(upstream_ports)
    text = NGINX_SITE.read_text()
    servers = list(re.finditer(r"^(\s*)server 127\.0\.0\.1:\d+((?: [^;\n]+)?);\n", text, re.M))
    if not servers:
        raise RuntimeError("deploy/nginx.conf: expected upstream lines `server 127.0.0.1:PORT`")
    indent, parameters = servers[0].group(1), servers[0].group(2)
    lines = "".join(f"{indent}server 127.0.0.1:{port}{parameters};\n" for port in ports)
    for match in reversed(servers):
        text = (
            text[: match.start()] + ("" if match is not servers[0] else lines) + text[match.end() :]
        )
    text = _replace_once(
        text, r"^(\s*)listen \d+((?: [^;\n]+)?);", rf"\g<1>listen 127.0.0.1:{listen_port}\g<2>;"
    )
    if limits is not None:
        text = _replace_once(text, r"rate=\d+r/s;", f"rate={limits.rate_per_s}r/s;")
        text = _replace_once(text, r"burst=\d+ nodelay;", f"burst={limits.burst} nodelay;")
        text = _replace_once(
            text,
            r"limit_conn registry_exports \d+;",
            f"limit_conn registry_exports {limits.exports};",
        )
    if spool_limit is not None:
        text = _replace_once(
            text, r"proxy_max_temp_file_size \S+;", f"proxy_max_temp_file_size {spool_limit};"
        )
    return _replace_once(
        text, r"^(\s*)access_log \S+ registry_json;", rf"\g<1>access_log {access_log};"
    )


def main_config(prefix: Path, site: Path, worker_processes: str) -> str:
    """A minimal nginx.conf around the site, with every writable path under prefix."""
    temp = {
        name: prefix / "temp" / name
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    }
    for path in temp.values():
        path.mkdir(parents=True, exist_ok=True)
    # As root, nginx's workers would switch to Debian's www-data, which may not reach a
    # private temporary folder; keep them as the user running the test instead.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}worker_processes {worker_processes};\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        f"    client_body_temp_path {temp['client_body']};\n"
        f"    proxy_temp_path {temp['proxy']};\n"
        f"    fastcgi_temp_path {temp['fastcgi']};\n"
        f"    uwsgi_temp_path {temp['uwsgi']};\n"
        f"    scgi_temp_path {temp['scgi']};\n"
        f"    include {site};\n"
        "}\n"
    )


@dataclass
class Nginx:
    """A running nginx in front of gunicorn."""

    port: int
    process: subprocess.Popen
    prefix: Path

    @property
    def base(self) -> str:
        """The API's URL through nginx: the /v1 prefix, no trailing slash."""
        return f"http://127.0.0.1:{self.port}{PREFIX}"

    @property
    def root(self) -> str:
        """nginx's own root URL."""
        return f"http://127.0.0.1:{self.port}"

    def error_output(self) -> str:
        """What nginx wrote to its error log."""
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stop it (SIGTERM: fast shutdown)."""
        stop_process(self.process)


def start_nginx(
    prefix: Path,
    upstream_port: int | Sequence[int],
    worker_processes: str = "1",
    access_log: bool = False,
    limits: ClientLimits | None = LIFTED,
    spool_limit: str | None = None,
) -> Nginx:
    """nginx in the foreground with deploy/nginx.conf in front of 127.0.0.1:upstream_port(s)."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
    prefix.mkdir(parents=True, exist_ok=True)
    # A port found free may be taken by another process before nginx binds it (nginx cannot
    # be handed a listening socket as gunicorn is): nginx then exits, and another port is
    # tried; and it counts as started only once its own process holds the listening socket,
    # so a foreign server on that port is never taken for it.
    for _attempt in range(5):
        port = free_port()
        log = f"{prefix / 'access.log'} registry_json" if access_log else "off"
        site = prefix / "registry.conf"
        site.write_text(render_site(upstream_port, port, log, limits, spool_limit))
        conf = prefix / "nginx.conf"
        conf.write_text(main_config(prefix, site, worker_processes))
        directives = (
            f"daemon off; pid {prefix / 'nginx.pid'}; error_log {prefix / 'error.log'} warn;"
        )
        check = subprocess.run(
            [binary, "-t", "-q", "-p", str(prefix), "-c", str(conf), "-g", directives],
            capture_output=True,
            text=True,
        )
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t refused the configuration:\n{check.stderr}")
        process = subprocess.Popen(
            [binary, "-p", str(prefix), "-c", str(conf), "-g", directives],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            if _wait_until_it_listens(process, port):
                return Nginx(port, process, prefix)
        except BaseException:
            stop_process(process)
            raise
    raise RuntimeError("nginx could not bind a free port in 5 tries")


def _wait_until_it_listens(process: subprocess.Popen, port: int, seconds: float = 30) -> bool:
    """True once process itself holds a socket listening on port; False if it exited first
    (it could not bind); RuntimeError if neither happens in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if _holds_listener(process.pid, port):
            return True
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen on port {port} within {seconds} s")


def _holds_listener(pid: int, port: int) -> bool:
    """Whether process pid has a TCP socket listening on 127.0.0.1:port (Linux's /proc)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for entry in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(entry)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.split(":")[1], 16) == port and inode in inodes:
                return True
    return False
