"""The export limit (docs/export.md, Capacity): at most REGISTRY_MAX_EXPORTS exports stream at once
per instance, counted across all of one gunicorn's workers.

Each slot is one byte of a file that every worker of the instance opens (gunicorn.conf.py
names it, in the instance's own metrics folder), held with a POSIX record lock
(`fcntl.lockf`) for as long as its export streams. The kernel keeps the count: a lock is
released when its export ends and also when its worker dies, so a killed worker never leaks
a slot, and no process has to tidy up after another. Record locks belong to a process, not
to a thread, so the slots a process holds are also kept in a set, for threaded workers.

Without that file (the Flask test client, `flask run`) the limit is the process's own: a
private file stands in for it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from dataclasses import dataclass, field


@dataclass
class ExportSlots:
    """Up to `limit` numbered slots, shared by every process that opens the same file."""

    limit: int
    path: str | None = None
    _fd: int | None = None
    _pid: int | None = None
    _held: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self) -> int | None:
        """Take a free slot without waiting: its number, or None when all are taken."""
        with self._lock:
            fd = self._file()
            for slot in range(self.limit):
                if slot in self._held:
                    continue
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot, os.SEEK_SET)
                except OSError:
                    continue  # another process holds it
                self._held.add(slot)
                return slot
            return None

    def release(self, slot: int) -> None:
        """Give a slot back (once per acquire)."""
        with self._lock:
            if slot not in self._held or self._fd is None or self._pid != os.getpid():
                return
            self._held.discard(slot)
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot, os.SEEK_SET)

    def _file(self) -> int:
        """This process's descriptor of the slots file, opened once per process.

        Opened after the fork and never closed: closing any descriptor of a file drops every
        record lock the process holds on it.
        """
        if self._fd is None or self._pid != os.getpid():
            if self.path is None:
                handle, self.path = tempfile.mkstemp(prefix="registry-export-slots-")
                os.close(handle)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._pid = os.getpid()
            self._held = set()
        return self._fd
