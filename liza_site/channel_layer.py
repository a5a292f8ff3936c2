"""The embedded default's channel layer: Channels' in-memory layer, its expiry sweep throttled.

Channels' `InMemoryChannelLayer` runs `_clean_expired` on every `receive` and every
`group_send`, and that sweep walks every channel's queue and every member of every group. Each
open board is a consumer waiting in `receive`, so one board event costs N receives, each
walking N channels and the 2N group memberships of N boards: quadratic in the open boards.
At 500 boards it was a third of daphne's event-loop time (bench/BOARD.md, "the embedded
default's fan-out").

Here the sweep runs at most once per `clean_every` seconds (1 s unless the layer's CONFIG says
otherwise). What it removes (messages older than `expiry`, 60 s; memberships older than
`group_expiry`, a day) is then removed up to that much later, which nothing can tell apart;
everything else is Channels' own code. (Channels' maintainers call this layer one for tests:
the embedded default is one process by design, README "HTTP server".)

The watcher is a second process with a layer of its own, which no board listens to. So the
layer of a process that serves boards also listens on PostgreSQL (`LISTEN liza_board`, from its
first `group_add`, in the server's loop) and hands what arrives to its groups; a process that
serves none (the watcher, a management command) sends its board messages with `notify` instead
(boards.coordination.outbox). A relayed message goes through `relay_hook` first: the outbox
numbers a relayed board event there, in the server, which numbers the one stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer
from django.db import connections

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "liza_board"
RECONNECT_AFTER = 1.0  # seconds before listening again after an error (a database restart)


def _unstamped(message: dict[str, Any]) -> None:
    pass


def _no_gap(groups: list[str]) -> None:
    pass


# Set by the outbox (which sits above this module): `relay_hook` stamps a relayed message
# before delivery; `resumed_hook(groups)` runs when listening resumes after an interruption,
# whose notifications are lost (it makes the groups' open boards see a gap, and resynchronise).
relay_hook: Callable[[dict[str, Any]], None] = _unstamped
resumed_hook: Callable[[list[str]], None] = _no_gap


def connection_params() -> dict[str, Any]:
    """psycopg's arguments for the default database, as Django connects (a host, or the
    embedded cluster's socket folder), without Django's own cursor and adapters."""
    params = connections["default"].get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return params


def notify(group: str, message: dict[str, Any]) -> None:
    """Hand `message` for `group` to the processes that serve boards, on Django's connection
    (after commit: autocommit, so PostgreSQL delivers it at once)."""
    payload = json.dumps({"group": group, "message": message}, separators=(",", ":"))
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, payload])


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    def __init__(self, *args, clean_every: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.clean_every = clean_every  # seconds between two expiry sweeps
        self._next_clean = 0.0
        self._listener: asyncio.Task | None = None

    @property
    def listening(self) -> bool:
        """This process serves boards: it sends locally and receives the others' notifications."""
        return self._listener is not None

    async def group_add(self, group: str, channel: str) -> None:
        await super().group_add(group, channel)
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        interrupted = False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    **connection_params(), autocommit=True
                ) as connection:
                    await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    if interrupted:
                        resumed_hook(list(self.groups))
                        interrupted = False
                    async for notification in connection.notifies():
                        await self._relay(notification.payload)
            except asyncio.CancelledError:
                raise
            except Exception:  # a database restart, say: never give up listening
                logger.warning("board notifications: listening again shortly", exc_info=True)
            interrupted = True
            await asyncio.sleep(RECONNECT_AFTER)

    async def _relay(self, payload: str) -> None:
        try:
            envelope = json.loads(payload)
            message = envelope["message"]
            relay_hook(message)
            await self.group_send(envelope["group"], message)
        except Exception:  # one bad notification must not stop the listener
            logger.warning("board notification not relayed: %.200s", payload, exc_info=True)

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_clean:
            return
        self._next_clean = now + self.clean_every
        super()._clean_expired()
