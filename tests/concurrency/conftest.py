"""Real parallelism on PostgreSQL: threads on their own connections, and a real ASGI server.

Tests here commit their data (`django_db(transaction=True)`), because every thread and the
server process read it through connections of their own.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection, transaction

from tests.live_server import LiveServer, live_server, suite_database_url

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


@contextlib.contextmanager
def agent_row_held(pk: int, *, timeout: float = 30) -> Iterator[None]:
    """While the block runs, another transaction (a thread on its own connection) holds the
    agent row `pk` locked; released, and the thread gone, when the block ends."""
    held, release = threading.Event(), threading.Event()

    from agents.models import Agent

    def hold() -> None:
        try:
            with transaction.atomic():
                Agent.objects.select_for_update().get(pk=pk)
                held.set()
                release.wait(2 * timeout)
        finally:
            connection.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(timeout), "the agent row was not locked in time"
    try:
        yield
    finally:
        release.set()
        thread.join(timeout)


def _server_kind() -> str:
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        return "daphne"
    return "uvicorn"


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    """The product served by a separate ASGI process (uvicorn, else daphne) on 127.0.0.1.

    It reads the pytest-django test database, so tests using it must commit their data
    (`django_db(transaction=True)`). Unlike `live_server` (a thread of this process), it has
    its own interpreter, GIL and connections, as in production.
    """
    with django_db_blocker.unblock():
        database_url = suite_database_url()
    with live_server(
        name="concurrency",
        database_url=database_url,
        server=_server_kind(),
        # Publishing its board events to Redis, as a production server does.
        redis_url=os.environ.get("REDIS_URL"),
    ) as server:
        yield server
