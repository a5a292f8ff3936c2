"""Is the channel layer reachable? Boards are told, so "live updates paused" is visible.

With Redis down a board's socket stays open but nothing reaches it: the browser would show
"live" over a frozen board. One `LayerProbe` per event loop (one per ASGI worker) sends a
message through the layer to itself every `LIZA_LIVE_PROBE_INTERVAL` seconds while boards are
open; when that fails it marks the outage (`liza_site.outages.REDIS`, logged once) and sends
every board of this process `{"type": "live", "paused": true}`; when it works again,
`paused: false`, on which the board resynchronises (nothing committed meanwhile is lost: the
board reloads from the database).
Without Redis (the in-memory layer of the embedded default) there is nothing to probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from django.conf import settings

from liza_site.outages import REDIS

logger = logging.getLogger(__name__)

# Per process: another worker's probes must not answer this one's.
PROBE_GROUP = f"liza-layer-probe-{uuid.uuid4().hex[:12]}"
PROBE_TIMEOUT = 2.0


def probe_interval() -> float:
    return float(getattr(settings, "LIZA_LIVE_PROBE_INTERVAL", 5.0))


class LayerProbe:
    """A round trip through the layer: a message published to the probe's own group must come
    back on its own channel. Publishing alone is not enough: after Redis restarts, publishes
    succeed before the layer has subscribed again, and a board told "resumed" then would miss
    what came in between."""

    def __init__(self, layer) -> None:
        self.layer = layer
        self.boards: set[Any] = set()
        self.paused = False
        self._task: asyncio.Task | None = None
        self._channel: str | None = None
        self._received: asyncio.Queue = asyncio.Queue()
        self._listener: asyncio.Task | None = None
        self._count = 0

    def join(self, board) -> None:
        self.boards.add(board)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def leave(self, board) -> None:
        self.boards.discard(board)

    async def _listen(self) -> None:
        # Never cancelled while the probe lives: a cancelled `receive` drops its channel.
        while True:
            message = await self.layer.receive(self._channel)
            self._received.put_nowait(message.get("n"))

    async def _round_trip(self) -> None:
        if self._channel is None:
            channel = await self.layer.new_channel("liza-probe.")
            await self.layer.group_add(PROBE_GROUP, channel)
            self._channel = channel
            self._listener = asyncio.get_running_loop().create_task(self._listen())
        self._count += 1
        await self.layer.group_send(PROBE_GROUP, {"type": "probe.noop", "n": self._count})
        while await self._received.get() != self._count:
            pass  # an answer to an earlier, timed-out probe

    async def check(self) -> bool:
        try:
            await asyncio.wait_for(self._round_trip(), PROBE_TIMEOUT)
        except Exception as exc:  # a connection error or the timeout: the layer is not there
            REDIS.failed(exc)
            return False
        REDIS.succeeded()
        return True

    async def _run(self) -> None:
        while self.boards:
            reachable = await self.check()
            if reachable == self.paused:  # the state changed: tell every board of this loop
                self.paused = not reachable
                for board in list(self.boards):
                    with contextlib.suppress(Exception):  # a board closing meanwhile
                        await board.live_changed(paused=self.paused)
            await asyncio.sleep(probe_interval())


_probes: dict[int, LayerProbe] = {}


def layer_probe(layer) -> LayerProbe | None:
    """This event loop's probe, or None on the in-memory layer."""
    if not settings.REDIS_URL or layer is None:
        return None
    loop = asyncio.get_running_loop()
    probe = _probes.get(id(loop))
    if probe is None or probe.layer is not layer:
        probe = _probes[id(loop)] = LayerProbe(layer)
    return probe
