"""Real parallelism on PostgreSQL: threads on their own connections, and a real ASGI server.

Tests here commit their data (`django_db(transaction=True)`), because every thread and the
server process read it through connections of their own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # World() makes a human admin; PBKDF2 would cost ~0.3 s per test for a password nobody uses.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# ---------------------------------------------------------------------------------------------
# threads released together
# ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_together(*calls: Callable[[], Any], timeout: float = 60) -> list[Outcome]:
    """Run each call in its own thread on its own DB connection, all released at one instant.

    Each thread connects before the barrier (so connecting is not part of the race) and closes
    its connection afterwards. Exceptions are returned, not raised, so a test can assert which
    side lost and how.
    """
    barrier = threading.Barrier(len(calls), timeout=timeout)
    outcomes = [Outcome() for _ in calls]

    def body(index: int, call: Callable[[], Any]) -> None:
        try:
            connection.ensure_connection()
            barrier.wait()
            outcomes[index].value = call()
        except BaseException as exc:
            outcomes[index].error = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=body, args=(i, call), daemon=True) for i, call in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(t.is_alive() for t in threads), f"a racing thread hung for {timeout}s"
    return outcomes


# ---------------------------------------------------------------------------------------------
# a real ASGI server on the test database
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url(settings_dict: dict[str, Any]) -> str:
    user = quote(settings_dict.get("USER") or "")
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


def _server_command(port: int) -> list[str]:
    app = "liza_site.asgi:application"
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        return [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app]
    # A keep-alive longer than any pause of a test client: a connection the server closes
    # just as the client reuses it for a POST would fail that request.
    return [
        sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
        "--no-access-log", "--log-level", "warning", "--lifespan", "off",
        "--timeout-keep-alive", "300",
    ]  # fmt: skip


@dataclass
class LiveServer:
    url: str
    log: Path

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker):
    """The product served by a separate ASGI process (uvicorn, else daphne) on 127.0.0.1.

    It reads the pytest-django test database, so tests using it must commit their data
    (`django_db(transaction=True)`). Unlike `live_server` (a thread of this process), it has
    its own interpreter, GIL and connections, as in production.
    """
    port = _free_port()
    env = dict(os.environ)
    env["DATABASE_URL"] = _database_url(connection.settings_dict)
    env["DJANGO_SETTINGS_MODULE"] = "liza_site.settings"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    log = Path(tempfile.mkstemp(prefix="liza-asgi-", suffix=".log")[1])
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _server_command(port),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LiveServer(url=f"http://127.0.0.1:{port}", log=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the ASGI server exited:\n{server.log_tail()}")
            try:
                urllib.request.urlopen(f"{server.url}/api/v1/projects/none/tasks", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # Django answered (401/404)
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the ASGI server did not answer in 60 s:\n{server.log_tail()}")
                time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        log.unlink(missing_ok=True)
