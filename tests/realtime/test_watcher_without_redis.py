"""The embedded default (no Redis, the in-memory layer): the watcher is a process of its own,
and its changes reach a board open on the server through PostgreSQL (LISTEN/NOTIFY,
liza_site/channel_layer.py). Real processes: a daphne server without REDIS_URL and a real
`manage.py liza_watch`, on the test's committed data."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from django.utils import timezone
from websockets.asyncio.client import connect

from boards.coordination.models.projects import ProjectConfig
from boards.coordination.services.goals import goal_create
from tests.board.live.helpers import session_cookie
from tests.lifecycle import World
from tests.live_server import live_server, suite_database_url, watcher_process

pytestmark = pytest.mark.django_db(transaction=True)

INTERVAL = 1  # seconds: the project's watch_interval
WAIT = 30.0  # seconds for the watcher process to start and sweep on a loaded shared machine


def test_the_watchers_sweep_and_alert_reach_an_open_board_numbered_by_the_server():
    world = World(now=timezone.now())
    goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    world.blocked("T-1")  # the watcher's first sweep raises a BLOCKED alert: a board event
    ProjectConfig.objects.filter(project=world.project).update(watch_interval=INTERVAL)
    cookie = session_cookie(world.admin)
    slug = world.project.slug

    with live_server(name="watch-noredis", database_url=suite_database_url()) as server:

        async def scenario():
            ws_url = f"ws://127.0.0.1:{server.port}/ws/p/{slug}/"
            async with connect(
                ws_url, additional_headers={"Cookie": cookie}, origin=server.url
            ) as ws:
                hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
                await asyncio.sleep(0.5)  # the layer's listener: LISTEN before the watcher
                watcher = watcher_process(slug, env={"REDIS_URL": ""}, stderr=subprocess.STDOUT)
                try:
                    swept, changes = None, None
                    while swept is None or changes is None:
                        message = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
                        if message["type"] == "watcher":
                            swept = swept or message
                        elif message["type"] == "changes":
                            changes = changes or message
                finally:
                    watcher.terminate()
                    output = await asyncio.to_thread(lambda: watcher.communicate(timeout=30)[0])
            return hello, swept, changes, output

        hello, swept, changes, output = asyncio.run(asyncio.wait_for(scenario(), 90))

    assert swept == {"type": "watcher", "silent_after": 3 * INTERVAL}, output
    # The server numbers the relayed event: it continues the stream the board started from.
    assert changes["seq"] == hello["seq"] + 1, (hello, changes)
    kinds = {change["type"] for change in changes["changes"]}
    assert {"sprint.changed", "task.changed"} <= kinds, changes
