"""The board websocket (SPEC §7): one per open board, joined only after a membership check.

A client never names a group: the server derives it from the project it checked the session's
user against. Messages from `boards.coordination.outbox` carry ids; each websocket process renders
a message once (cards, agent rows, header) and hands the same payload to every board it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import OrderedDict
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from boards.board.live.access import board_access_holds
from boards.board.live.health import layer_probe
from boards.coordination.outbox import board_group, current_sequence, user_group
from liza_site.outages import REDIS

# Close codes in the 4000 range are the application's own (RFC 6455 §7.4.2).
CLOSE_NOT_FOUND = 4404
# Access ended while the socket was open (boards.board.live.access): signed out, membership
# removed, user deactivated. The board does not reconnect on its own; a reload shows the login
# or a 404.
CLOSE_ACCESS_ENDED = 4403
# The channel layer (Redis) is unreachable: RFC 6455 "try again later".
CLOSE_TRY_AGAIN_LATER = 1013

_RENDERED_CACHE_SIZE = 512
_rendered: OrderedDict[tuple[int, int], asyncio.Future] = OrderedDict()


async def _rendering(message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The payload for `message` and its JSON text, made once per process for every board."""
    key = (message["project_id"], message["seq"])
    future = _rendered.get(key)
    if future is None:
        future = asyncio.get_running_loop().create_future()
        _rendered[key] = future
        while len(_rendered) > _RENDERED_CACHE_SIZE:
            _rendered.popitem(last=False)
        try:
            from boards.board.live.render import render_changes

            changes = await database_sync_to_async(render_changes)(
                message["project_id"], message["changes"]
            )
            payload = {"type": "changes", "seq": message["seq"], "changes": changes}
            future.set_result((payload, json.dumps(payload)))
        except Exception as exc:
            _rendered.pop(key, None)
            future.set_exception(exc)
            future.exception()  # boards awaiting it get the error; nobody else should log it
            raise
    if future.done():  # the common case: one render, then every other board reads it
        return future.result()
    return await asyncio.shield(future)


async def rendered(message: dict[str, Any]) -> dict[str, Any]:
    """The payload for `message`, rendered once per process and shared by every board."""
    return (await _rendering(message))[0]


@database_sync_to_async
def _project_for_member(user, slug: str) -> int | None:
    from boards.coordination.models.projects import Project
    from boards.coordination.selectors.access import human_role

    if user is None or not getattr(user, "is_authenticated", False):
        return None
    project = Project.objects.filter(slug=slug).first()
    if project is None or human_role(user, project) is None:
        return None
    return project.pk


class BoardConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None
    # The user's own group: `access.changed` reaches every socket of the user, in any process.
    own_group: str | None = None
    access_ended = False
    _rechecks: asyncio.Task | None = None

    async def connect(self) -> None:
        slug = self.scope["url_route"]["kwargs"]["slug"]
        user = self.scope.get("user")
        if getattr(user, "is_authenticated", False):
            # The user's group before the check: a revocation committed after the check can
            # then not slip between the check and the join.
            self.own_group = user_group(user.pk)
            if not await self._join(self.own_group):
                return
        project_id = await _project_for_member(user, slug)
        if project_id is None:
            await self._leave_groups()
            # Refused before the handshake completes: the browser sees the socket fail, exactly
            # as for a project that does not exist.
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.project_id = project_id
        self.user_id = user.pk
        session = self.scope.get("session")
        self.session_key = getattr(session, "session_key", None)
        self.group = board_group(project_id)
        if not await self._join(self.group):
            return
        await self.accept()
        seq = await database_sync_to_async(current_sequence)(project_id)
        self.probe = layer_probe(self.channel_layer)
        if self.probe is not None:
            self.probe.join(self)
        hello: dict[str, Any] = {"type": "hello", "seq": seq}
        if self.probe is not None and self.probe.paused:
            hello["paused"] = True
        await self.send_json(hello)
        self._rechecks = asyncio.get_running_loop().create_task(self._recheck_access_every())

    async def _recheck_access_every(self) -> None:
        """The backstop: an `access.changed` published while the layer was down is lost, so
        the access is checked again every LIZA_LIVE_ACCESS_RECHECK seconds whatever arrives."""
        while not self.access_ended and self.group is not None:
            await asyncio.sleep(settings.LIZA_LIVE_ACCESS_RECHECK)
            try:
                await self.access_changed({})
            except Exception:  # the database is down: not a reason to close; next time
                continue

    async def _join(self, group: str) -> bool:
        """Join a group; with the layer unreachable, refuse the socket with 1013 ("try again
        later", logged once per outage): the browser retries with backoff."""
        try:
            await self.channel_layer.group_add(group, self.channel_name)
        except Exception as exc:
            REDIS.failed(exc)
            self.group = self.own_group = None
            await self.close(code=CLOSE_TRY_AGAIN_LATER)
            return False
        return True

    async def disconnect(self, code: int) -> None:
        if self._rechecks is not None:
            self._rechecks.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._rechecks
        if getattr(self, "probe", None) is not None:
            self.probe.leave(self)
        await self._leave_groups()

    async def live_changed(self, *, paused: bool) -> None:
        """The channel layer went away or came back (boards.board.live.health): the board says
        "live updates paused", and resynchronises when they resume. On resuming, the access
        is checked first: an `access.changed` published during the outage was lost with it."""
        if not paused and not self.access_ended and self.group is not None:
            await self.access_changed({})
        if not self.access_ended and self.group is not None:
            await self.send_json({"type": "live", "paused": paused})

    async def watcher_swept(self, message: dict[str, Any]) -> None:
        """A watcher has just swept the project: the board's "watcher last seen" starts again
        from 0 s (board.js), with the limit the sweep knew (3 of the project's intervals)."""
        if not self.access_ended and self.group is not None:
            await self.send_json({"type": "watcher", "silent_after": message["silent_after"]})

    async def _leave_groups(self) -> None:
        for group in (self.group, self.own_group):
            if group is not None:
                await self.channel_layer.group_discard(group, self.channel_name)
        self.group = self.own_group = None

    async def access_changed(self, message: dict[str, Any]) -> None:
        """Something that may end this user's access changed: check again, close if it did.

        Messages reach a consumer one at a time, so no board event is sent while this runs.
        """
        if self.access_ended or self.group is None:  # closed, or refused at connect
            return
        ended = message.get("ended_session")
        if ended is None or ended != self.session_key:
            holds = await database_sync_to_async(board_access_holds)(
                session_key=self.session_key, user_id=self.user_id, project_id=self.project_id
            )
            if holds:
                return
        self.access_ended = True
        await self._leave_groups()
        await self.close(code=CLOSE_ACCESS_ENDED)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # Boards only listen; a ping keeps proxies from closing an idle socket.
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] == "board.event":
            # Channels runs close_old_connections() in the sync thread before every handler:
            # one thread round trip per open board per event, serialised in that one thread.
            # `board_event` reaches the database only through `database_sync_to_async` (once
            # per process per message), which closes stale connections itself.
            await self.board_event(message)
        else:
            await super().dispatch(message)

    async def board_event(self, message: dict[str, Any]) -> None:
        if self.access_ended:  # already queued when the access ended: never sent
            return
        # The JSON text too is made once per message, not once per board.
        _, text = await _rendering(message)
        await self.send(text_data=text)
