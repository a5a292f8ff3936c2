"""Which pages may open a board socket (liza_site/websocket_origin.py): scheme, host and port
of the Origin must match the server's own origin or one on the explicit allow-list."""

from __future__ import annotations

import pytest

from tests.board.live.helpers import board_socket, run, sprint_world
from tests.factories import member

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_memory_layer")]


def _opens(world, *, origin: bytes, host: bytes, scheme: str = "ws", extra=()) -> bool:
    socket = board_socket(world.project.slug, user=member(world.project, "viewer"))
    headers = [h for h in socket.scope["headers"] if h[0] not in (b"origin", b"host")]
    socket.scope["headers"] = [*headers, (b"origin", origin), (b"host", host), *extra]
    socket.scope["scheme"] = scheme

    async def scenario():
        connected, _ = await socket.connect()
        if connected:
            await socket.disconnect()
        return connected

    return run(scenario)


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "opens"),
    [
        (b"http://127.0.0.1:8000", b"127.0.0.1:8000", "ws", True),
        (b"http://localhost:8000", b"localhost:8000", "ws", True),
        # The finding: same host, a port the site does not serve from.
        (b"http://localhost:1", b"localhost:8000", "ws", False),
        (b"http://127.0.0.1:8001", b"127.0.0.1:8000", "ws", False),
        (b"http://localhost:8000", b"127.0.0.1:8000", "ws", False),
        (b"https://127.0.0.1:8000", b"127.0.0.1:8000", "ws", False),
        (b"https://127.0.0.1", b"127.0.0.1", "wss", True),
        (b"http://127.0.0.1", b"127.0.0.1", "wss", False),
        # A Host outside ALLOWED_HOSTS is no "own origin", whatever the Origin says.
        (b"http://evil.example:8000", b"evil.example:8000", "ws", False),
        (b"null", b"127.0.0.1:8000", "ws", False),
    ],
)
def test_own_origin_matches_scheme_host_and_port(origin, host, scheme, opens):
    assert _opens(sprint_world(), origin=origin, host=host, scheme=scheme) is opens


def test_the_allow_list_admits_exactly_its_origins(settings):
    settings.WEBSOCKET_ALLOWED_ORIGINS = ["https://board.example.com"]
    world = sprint_world()
    host = b"127.0.0.1:8000"
    assert _opens(world, origin=b"https://board.example.com", host=host)
    assert _opens(world, origin=b"https://board.example.com:443", host=host)
    assert not _opens(world, origin=b"https://board.example.com:8443", host=host)
    assert not _opens(world, origin=b"http://board.example.com", host=host)
    assert not _opens(world, origin=b"https://evil.board.example.com", host=host)


def test_behind_a_tls_proxy_the_forwarded_scheme_counts(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["board.example.com"]
    world = sprint_world()
    host = b"board.example.com"
    proxied = [(b"x-forwarded-proto", b"https")]
    assert _opens(world, origin=b"https://board.example.com", host=host, extra=proxied)
    assert not _opens(world, origin=b"http://board.example.com", host=host, extra=proxied)
    assert not _opens(world, origin=b"https://board.example.com", host=host)
