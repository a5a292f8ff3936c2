"""The product served by real ASGI server subprocesses, for the tests that need a real server:
tests/e2e (a browser), tests/realtime (two processes sharing Redis), tests/concurrency (HTTP
clients racing).

Each server is its own interpreter on 127.0.0.1, loading `tests.settings`, on the database
the caller names (the pytest-django test database: tests using a server commit their data,
`django_db(transaction=True)`). The listening socket is bound here and handed over (`--fd`),
so no other process can take the port between choosing and serving it. Starting waits until
the server answers a page; stopping kills its whole process group, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
APP = "liza_site.asgi:application"
SETTINGS = "tests.settings"
READY_PATH = "/login/"  # a Django view with a template: answering it means the app is loaded
START_TIMEOUT = 60.0  # seconds; Django's import under a loaded CI box


def free_port() -> int:
    """A TCP port nobody listens on right now (for a server that takes a port number: another
    process could still take it before that server binds it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: Mapping[str, Any]) -> str:
    """A DATABASE_URL for a server process, from a connection's settings (the test database)."""
    assert "postgresql" in settings_dict["ENGINE"], "live servers run on PostgreSQL like the suite"
    auth = quote(settings_dict.get("USER") or "", safe="")
    if settings_dict.get("PASSWORD"):
        auth += ":" + quote(settings_dict["PASSWORD"], safe="")
    socket = (settings_dict.get("OPTIONS") or {}).get("host")
    if socket and not settings_dict.get("HOST"):
        # The embedded cluster (liza_site/embedded_db.py): a Unix socket folder, no TCP port.
        return f"postgres://{auth}@/{settings_dict['NAME']}?host={quote(socket, safe='/')}"
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}@{host}:{port}/{settings_dict['NAME']}"


def sibling_database_url(url: str, name: str) -> str:
    """`url` with its database replaced by `name` (same server, socket or host and port)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def suite_database_url() -> str:
    """DATABASE_URL of the database this process's tests run on."""
    from django.db import connection

    return database_url(connection.settings_dict)


# The production server (README "Production", `.ci/serve --production`): two worker processes,
# a dead one replaced. Its port is passed by number (granian takes no socket), so another
# process could take it between choosing and binding it: the start then fails loudly.
GRANIAN = [
    "--interface", "asginl", "--workers", "2", "--respawn-failed-workers", "--respawn-interval",
    "0.5", "--log-level", "warning",
]  # fmt: skip


def _command(server: str, fd: int, port: int) -> list[str]:
    if server == "granian":
        return [
            sys.executable, "-m", "granian", *GRANIAN, "--host", "127.0.0.1", "--port", str(port),
            APP,
        ]  # fmt: skip
    if server == "daphne":
        return [sys.executable, "-m", "daphne", "--fd", str(fd), "-v", "0", APP]
    if server == "uvicorn":
        # A keep-alive longer than any pause of a test client: a connection the server closes
        # just as the client reuses it for a POST would fail that request.
        return [
            sys.executable, "-m", "uvicorn", APP, "--fd", str(fd), "--no-access-log",
            "--log-level", "warning", "--lifespan", "off", "--timeout-keep-alive", "300",
        ]  # fmt: skip
    raise ValueError(f"unknown server {server!r} (daphne, uvicorn or granian)")


class LiveServer:
    """One server subprocess, started when made; `wait_ready()` waits for it, `stop()` ends it.

    `redis_url`: the channels-redis layer on that Redis; without it the in-memory layer of this
    one process, so a board connected to it sees exactly the changes made through it. `env`
    adds to (or overrides) the server's environment; `log` keeps its output there (else in a
    temporary file, removed by `stop()`).
    """

    def __init__(
        self,
        *,
        name: str,
        database_url: str,
        server: str = "daphne",
        redis_url: str | None = None,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
    ) -> None:
        self.name = name
        self.server = server
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._keep_log = log is not None
        if log is None:
            log = Path(tempfile.mkstemp(prefix=f"liza-live-{name}-", suffix=".log")[1])
        self.log = log
        full_env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            "DJANGO_DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **(env or {}),
        }
        full_env.pop("REDIS_URL", None)
        if redis_url:
            full_env["REDIS_URL"] = redis_url
        if server == "granian":
            sock.close()  # see GRANIAN
        try:
            with log.open("wb") as out:
                self.process = subprocess.Popen(
                    _command(server, sock.fileno(), self.port),
                    cwd=ROOT,
                    env=full_env,
                    pass_fds=[] if server == "granian" else [sock.fileno()],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stop() reaches every child
                )
        finally:
            sock.close()  # the server holds its own copy

    def wait_ready(self, deadline: float | None = None) -> None:
        """Return once the server answers READY_PATH with 200; raise if it dies or times out."""
        deadline = deadline or time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"server {self.name} ({self.server}) exited with {self.process.returncode}:\n"
                    f"{self.log_tail()}"
                )
            with (
                contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
                urllib.request.urlopen(self.url + READY_PATH, timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(
            f"server {self.name} ({self.server}) did not answer in {START_TIMEOUT:g} s:\n"
            f"{self.log_tail()}"
        )

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Killed, not terminated: it holds nothing to save, and a graceful stop takes seconds
        (and must be over before pytest-django drops the test database it is connected to)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        if not self._keep_log:
            self.log.unlink(missing_ok=True)


@contextlib.contextmanager
def live_servers(names: Sequence[str], **options: Any) -> Iterator[list[LiveServer]]:
    """One server per name, with the same options, started together (they boot in parallel)
    and ready when this yields; stopped when it exits. Their logs are printed if starting fails
    or the block raises (pytest shows them with the failure)."""
    servers: list[LiveServer] = []
    try:
        for name in names:
            servers.append(LiveServer(name=name, **options))
        deadline = time.monotonic() + START_TIMEOUT
        for server in servers:
            server.wait_ready(deadline)
        yield servers
    except BaseException:
        for server in servers:
            print(f"--- server {server.name} ({server.server}) log ---\n{server.log_tail()}")
        raise
    finally:
        for server in servers:
            server.stop()


@contextlib.contextmanager
def live_server(name: str = "server", **options: Any) -> Iterator[LiveServer]:
    """One server (see `live_servers`)."""
    with live_servers([name], **options) as (server,):
        yield server


def watcher_process(
    project_slug: str | Sequence[str],
    *,
    once: bool = False,
    env: Mapping[str, str] | None = None,
    stderr: int = subprocess.PIPE,
) -> subprocess.Popen:
    """A real `manage.py liza_watch` process for one project or several on the suite's
    database (text pipes; `stderr=subprocess.STDOUT` merges its log into stdout). The caller
    stops it."""
    slugs = [project_slug] if isinstance(project_slug, str) else list(project_slug)
    command = [sys.executable, "manage.py", "liza_watch"]
    for slug in slugs:
        command += ["--project", slug]
    if once:
        command.insert(3, "--once")
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": suite_database_url(),
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            **(env or {}),
        },
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
