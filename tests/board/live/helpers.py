"""What the websocket tests share: a layer per test, a logged-in socket, a world with a sprint.

Async scenarios run under `async_to_sync` from a synchronous test. Channels'
`database_sync_to_async` then runs every ORM call (the consumer's membership check, the render
of a message, the services a scenario calls) back on the test's own thread and connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from boards.coordination import outbox as events
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from tests.lifecycle import World

ORIGIN = b"http://127.0.0.1"


@contextlib.contextmanager
def in_memory_layer_settings(settings) -> Iterator[None]:
    """The in-memory layer and the process-local sequence (the embedded default)."""
    settings.REDIS_URL = ""
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "liza_site.channel_layer.InMemoryChannelLayer"}
    }
    events._redis.cache_clear()
    # The process-local numbers start afresh, as in a new server process: a test that counted
    # on a project id before (in this worker) must not leave its numbers to the next.
    with events._local_lock:
        events._local_counters.clear()
        events._local_last.clear()
    events._missed.clear()
    try:
        yield
    finally:
        events._redis.cache_clear()


@contextlib.contextmanager
def redis_layer_settings(settings, url: str) -> Iterator[str]:
    """The production layer (Redis pub/sub) on a database and a channel prefix of its own;
    yields the prefix.

    Pub/sub channels ignore Redis database numbers, so the prefix keeps these groups apart
    from anything else publishing `board-<id>` on the same server.
    """
    client = redis.Redis.from_url(url)
    client.flushdb()
    prefix = f"liza-test-{uuid.uuid4().hex[:12]}"
    settings.REDIS_URL = url
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": prefix},
        }
    }
    events._redis.cache_clear()
    try:
        yield prefix
    finally:
        client.flushdb()
        client.close()
        events._redis.cache_clear()


def session_cookie(user) -> str:
    """`sessionid=…` for a logged-in `user`, saved in the database as a real login would."""
    client = Client()
    client.force_login(user)
    name = django_settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


def board_socket(
    slug: str, *, user=None, headers: list[tuple[bytes, bytes]] | None = None
) -> WebsocketCommunicator:
    """A websocket to `/ws/p/<slug>/` through the real ASGI application (origin check, session
    auth, URL router). Call from sync code: the session is written to the database."""
    from liza_site.asgi import application

    all_headers = [(b"origin", ORIGIN), (b"host", b"127.0.0.1")]
    if user is not None:
        all_headers.append((b"cookie", session_cookie(user).encode()))
    all_headers.extend(headers or [])
    return WebsocketCommunicator(application, f"/ws/p/{slug}/", headers=all_headers)


def run(scenario: Callable[[], Any]) -> Any:
    """Run an async scenario from a synchronous test (see the module docstring)."""
    return async_to_sync(scenario)()


async def next_changes(socket: WebsocketCommunicator, timeout: float = 3.0) -> dict[str, Any]:
    """The next `changes` message (pongs and other chatter skipped), or fail on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise AssertionError("no changes message arrived in time")
        message = await socket.receive_json_from(timeout=left)
        if message.get("type") == "changes":
            return message


def sprint_world(project=None) -> World:
    """A World with a goal and an open sprint; its clock runs just behind the real one, so
    leases taken through it are alive when the board (which reads the real clock) shows them."""
    world = World(project, now=timezone.now() - timedelta(minutes=2))
    goal = goal_create(
        project=world.project, actor=world.planner, description="Live board", now=world.tick()
    )
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    return world


def changes_of(message: dict[str, Any], change_type: str) -> list[dict[str, Any]]:
    return [c for c in message["changes"] if c["type"] == change_type]
