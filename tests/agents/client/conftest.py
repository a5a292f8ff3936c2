"""The `liza` command line against the product served by a real ASGI process (tests/live_server).

Tests here commit their data (`django_db(transaction=True)`): the server reads it through its
own connections.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.live_server import LiveServer, live_server, suite_database_url


@pytest.fixture(scope="session")
def cli_server(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    """On the suite's Redis, as a production server runs, reading this worker's key-cache
    counter (tests/conftest.py): a pause, a resume, a revoked key or a config change a test
    makes bumps it (liza_site.key_generation), and the server's next request sees it. Without
    that the server's counter was its own, and it saw such a change only when its cached key
    row expired (agents.keycache.TTL, 30 s: the pause test waited twice that long)."""
    from liza_site import key_generation

    with django_db_blocker.unblock():
        database_url = suite_database_url()
    with live_server(
        name="cli",
        database_url=database_url,
        server="uvicorn",
        redis_url=os.environ.get("REDIS_URL"),
        env={"LIZA_TEST_KEY_COUNTER": key_generation.KEY},
    ) as server:
        yield server
