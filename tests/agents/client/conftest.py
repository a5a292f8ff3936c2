"""The `liza` command line against the product served by a real ASGI process (tests/live_server).

Tests here commit their data (`django_db(transaction=True)`): the server reads it through its
own connections.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live_server import LiveServer, live_server, suite_database_url


@pytest.fixture(scope="session")
def cli_server(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    with django_db_blocker.unblock():
        database_url = suite_database_url()
    with live_server(name="cli", database_url=database_url, server="uvicorn") as server:
        yield server
