"""The progress watchdog of one run (issue 24), separate from the lease: the supervisor
heartbeats for its agent whatever the agent does, so a hung agent would keep its lease for as
long as its process lives. Progress is any of:

- a line of output (the supervisor's pump calls `progress`);
- a new commit in the task's worktree (its HEAD, checked every few seconds);
- a protocol operation by the agent: `liza` and `liza mcp` touch `LIZA_PROGRESS_FILE` after
  each write they make (agents.client.http), and the watchdog reads its modification time.

None for `timeout` seconds → `on_stall` once (the supervisor terminates the agent: SIGTERM,
then SIGKILL after its grace, and reports the run as stalled). `progress_at` is what the
supervisor sends with each heartbeat, so the server sees a hung supervisor too.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from agents.client import gitops


class Watchdog:
    def __init__(
        self,
        *,
        timeout: float,
        on_stall: Callable[[], None],
        worktree: Path | None = None,
        progress_file: Path | None = None,
        check_every: float | None = None,
    ) -> None:
        self.timeout = max(0.5, float(timeout))
        self._on_stall = on_stall
        self._worktree = worktree
        self._progress_file = progress_file
        self.check_every = check_every or max(0.2, min(5.0, self.timeout / 4))
        self._last = time.monotonic()
        self._last_wall = time.time()
        self._head = self._read_head()
        self._mtime = self._read_mtime()
        self.stalled = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="liza-watchdog", daemon=True)
        self._thread.start()

    def progress(self) -> None:
        self._last = time.monotonic()
        self._last_wall = time.time()

    def progress_at(self) -> str:
        """The last progress, as the heartbeat reports it (ISO 8601, UTC)."""
        return datetime.fromtimestamp(self._last_wall, UTC).isoformat().replace("+00:00", "Z")

    def _read_head(self) -> str | None:
        if self._worktree is None or not self._worktree.exists():
            return None
        try:
            return gitops.git(self._worktree, "rev-parse", "HEAD", check=False) or None
        except (gitops.GitError, OSError):
            return None

    def _read_mtime(self) -> float | None:
        if self._progress_file is None:
            return None
        try:
            return os.stat(self._progress_file).st_mtime
        except OSError:
            return None

    def check(self) -> bool:
        """Progress seen since the last check (a commit, a protocol operation)?"""
        head, mtime = self._read_head(), self._read_mtime()
        moved = (head is not None and head != self._head) or (
            mtime is not None and mtime != self._mtime
        )
        self._head, self._mtime = head, mtime
        if moved:
            self.progress()
        return moved

    def _loop(self) -> None:
        while not self._done.wait(self.check_every):
            self.check()
            if time.monotonic() - self._last > self.timeout:
                self.stalled = True
                self._on_stall()
                return

    def stop(self) -> None:
        self._done.set()
