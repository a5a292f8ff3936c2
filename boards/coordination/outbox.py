"""The outbox of live board events: small, typed, published after commit (SPEC §7).

Services never publish directly and models never signal. `record_event` (and the heartbeat)
note what changed — a task, an agent, the sprint header — in a per-thread outbox; one
`transaction.on_commit` callback sends the whole outbox as ONE message with the project's next
sequence number, so a rolled-back change is never shown and a committed one always is.

The message carries only ids. Rendering (cards, agent rows, header) happens in the websocket
process that delivers it, once per message whatever the number of open boards (see
`boards.board.live.consumers`), so broadcasts cost a transition one INCR and one PUBLISH, not a
render.

A heartbeat's changes (no event: its lease and heartbeat age) are the exception: with Redis,
they wait up to `BEAT_WINDOW` seconds and go in one message with the project's other
heartbeats of that while (`_Beats`).

A board that sees a gap in the sequence, or reconnects, resynchronises from the server. With
`REDIS_URL` the sequence lives in Redis, so every ASGI process numbers one stream. Without it, a
process that serves no boards (the watcher, a management command) notifies PostgreSQL instead,
unnumbered, and the server relays and numbers it (`liza_site.channel_layer`). Publishing
never fails a transition: if the layer is down the change is committed anyway, the error is
logged, and boards catch up at their next resync.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import threading
import time
from collections import defaultdict
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

from liza_site import channel_layer, redis_client
from liza_site.outages import REDIS

logger = logging.getLogger(__name__)

# Change kinds and the typed events the consumer turns them into.
# EVENT: a row of the event log, for the activity feed (boards/insights/web/activity.py); boards
# ignore it. RUN: a running run's output moved (issue 24): an open drawer shows it live.
TASK, AGENT, SPRINT, EVENT, RUN = "task", "agent", "sprint", "event", "run"
EVENT_TYPES = {
    TASK: "task.changed",
    AGENT: "agent.changed",
    SPRINT: "sprint.changed",
    EVENT: "events.recorded",
    RUN: "run.output",
}


def board_group(project_id: int) -> str:
    """The Channels group of a project's boards; only the server ever names it."""
    return f"board-{project_id}"


def user_group(user_id: int) -> str:
    """The Channels group of every board socket a user has open, in every process."""
    return f"board-user-{user_id}"


# -- sequence numbers -------------------------------------------------------------------------

_local_counters: dict[int, itertools.count] = defaultdict(lambda: itertools.count(1))
_local_last: dict[int, int] = defaultdict(int)
_local_lock = threading.Lock()


# The process's shared client (short timeouts: a publish runs after a transition has
# committed, in its request).
_redis = redis_client.client


def _seq_key(project_id: int) -> str:
    return f"liza:board-seq:{project_id}"


def _redis_sequence(project_id: int, command: str, *args: int) -> int:
    """GET or INCR the project's counter, starting a missing one from the clock.

    Redis can lose the counter (restarted without persistence, flushed). Restarting it at 1
    would hand out numbers open boards have already seen, and they would drop every event up
    to their last number as "already applied". Started from the time in microseconds, a new
    counter begins above every number handed out before (each one costs a Redis round trip,
    far longer than a microsecond), so boards see a gap and resynchronise. The numbers stay
    below 2**53, exact in a browser's JavaScript, for two more centuries.
    """
    key = _seq_key(project_id)
    pipe = _redis().pipeline(transaction=False)
    pipe.set(key, time.time_ns() // 1000, nx=True)
    getattr(pipe, command)(key, *args)
    return int(pipe.execute()[1])


# Projects with an event this process could not publish (Redis down): their next number skips
# one, so every open board sees a gap and resynchronises instead of missing the change.
_missed: set[int] = set()


def next_sequence(project_id: int) -> int:
    if settings.REDIS_URL:
        gap = project_id in _missed
        value = _redis_sequence(project_id, "incrby", 2 if gap else 1)
        _missed.discard(project_id)
        return value
    with _local_lock:
        value = next(_local_counters[project_id])
        _local_last[project_id] = value
        return value


def current_sequence(project_id: int) -> int:
    """The last number handed out: a freshly rendered board continues after it."""
    if settings.REDIS_URL:
        if not REDIS.allow():
            return 0  # a board must render even with Redis down; it resyncs when it returns
        try:
            value = _redis_sequence(project_id, "get")
        except Exception as exc:
            REDIS.failed(exc)
            return 0
        REDIS.succeeded()
        return value
    with _local_lock:
        return _local_last[project_id]


# -- the outbox -------------------------------------------------------------------------------

_outbox = threading.local()


def _pending() -> dict[int, dict[tuple[str, int], bool]]:
    if not hasattr(_outbox, "changes"):
        _outbox.changes = {}
        _outbox.urgent = set()  # projects with a change that is not a heartbeat's
    return _outbox.changes


def changed(
    project_id: int, kind: str, object_id: int, *, controls: bool = False, beat: bool = False
) -> None:
    """Note a change to publish when the current transaction commits.

    `controls`: the change moves what the header's oversight controls offer (sprint or goal
    state, pause): only then do open boards fetch their controls again.

    `beat`: a heartbeat's change (no event; its lease and heartbeat age on open boards). With
    Redis, a transaction whose changes to a project are all heartbeats' is published within
    `BEAT_WINDOW` seconds, in one message with every other heartbeat of the project that came
    in meanwhile (`_Beats`), not by the request that committed it.
    """
    _note(project_id, kind, object_id, controls=controls, beat=beat)
    transaction.on_commit(flush)


def heartbeat(project_id: int, *objects: tuple[str, int]) -> None:
    """A heartbeat's changes (`(kind, id)`: its agent, its task), noted as `changed(...,
    beat=True)` notes each, with one `flush` for them all: a heartbeat writes in one statement,
    outside any transaction (agents.services.heartbeats), where `on_commit` flushes at once —
    one flush per change would send its agent and its task as two messages."""
    for kind, object_id in objects:
        _note(project_id, kind, object_id, controls=False, beat=True)
    transaction.on_commit(flush)


def _note(project_id: int, kind: str, object_id: int, *, controls: bool, beat: bool) -> None:
    changes = _pending().setdefault(project_id, {})
    changes[(kind, object_id)] = changes.get((kind, object_id)) or controls
    if not beat:
        _outbox.urgent.add(project_id)


def run_output(project_id: int, run_id: int) -> None:
    """A running run's output moved: its drawer shows the new lines once this commits."""
    changed(project_id, RUN, run_id)


def _message(project_id: int, changes: dict[tuple[str, int], bool]) -> dict[str, Any]:
    return {
        "type": "board.event",
        "project_id": project_id,
        "changes": [
            {"kind": kind, "id": object_id, **({"controls": True} if controls else {})}
            for (kind, object_id), controls in changes.items()
        ],
    }


def flush() -> list[dict[str, Any]]:
    """Send what this thread's committed work changed: one message per project (a project
    changed only by heartbeats: handed to `_beats`, sent within `BEAT_WINDOW`)."""
    pending = _pending()
    urgent = _outbox.urgent
    sent = []
    while pending:
        project_id, changes = pending.popitem()
        if project_id not in urgent and settings.REDIS_URL:
            _beats.add(project_id, changes)
            continue
        urgent.discard(project_id)
        message = _message(project_id, changes)
        if send(message):
            sent.append(message)
    return sent


class _PublisherLoop:
    """One long-lived event loop for publishing from sync code to a Redis layer.

    channels-redis keeps a connection per event loop; `async_to_sync` from a plain thread
    would make a loop (and a connection) per call. One loop in one daemon thread keeps one.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self._loop.run_forever, name="liza-board-publisher", daemon=True
                ).start()
            return self._loop

    def run(self, coro, timeout: float = 2.0):
        return asyncio.run_coroutine_threadsafe(coro, self._started()).result(timeout)


_publisher = _PublisherLoop()


# Heartbeats: at 16 agents a project gets hundreds a second, each noting its agent (and task)
# for open boards, which show their lease and heartbeat ages. Published one by one, each cost
# its request a sequence INCR and a PUBLISH handed to the publisher loop and waited for (~11 %
# of a heartbeat worker's Python time, bench/README.md). A board renders a message's ids as
# they are when it arrives, so one message for every heartbeat of a window shows what each of
# them would have, a moment later; it takes the project's next sequence number like any
# other, so no board sees a gap, and a change that is not a heartbeat's is never held back.
BEAT_WINDOW = 0.5  # seconds a heartbeat's change may wait to be merged with others


class _Beats:
    """Heartbeat changes waiting for their project's next message, per project (Redis only:
    without it the in-memory layer lives in the server's own loop, reachable from a request's
    thread only, so each heartbeat publishes as it commits)."""

    def __init__(self) -> None:
        self._waiting: dict[int, dict[tuple[str, int], bool]] = {}
        self._lock = threading.Lock()

    def add(self, project_id: int, changes: dict[tuple[str, int], bool]) -> None:
        with self._lock:
            waiting = self._waiting.get(project_id)
            if waiting is not None:  # a message is already due: this rides along
                for change, controls in changes.items():
                    waiting[change] = waiting.get(change) or controls
                return
            self._waiting[project_id] = dict(changes)
        timer = threading.Timer(BEAT_WINDOW, self._publish, [project_id])
        timer.daemon = True
        timer.start()

    def _take(self, project_id: int) -> dict[tuple[str, int], bool]:
        with self._lock:
            return self._waiting.pop(project_id, {})

    def _publish(self, project_id: int) -> None:
        """On the window's timer thread: send what waited, as a transition's message is sent."""
        changes = self._take(project_id)
        if not changes:  # already sent (`send_waiting`)
            return
        if REDIS.down:
            # Heartbeats make no attempt to reach Redis again (a transition's message does):
            # a gap instead, and open boards resynchronise when live updates resume.
            _missed.add(project_id)
            return
        send(_message(project_id, changes))

    def send_waiting(self) -> None:
        """Send every waiting message now (the process is exiting)."""
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for project_id, changes in waiting.items():
            send(_message(project_id, changes))


_beats = _Beats()
atexit.register(_beats.send_waiting)


# A board event relayed through PostgreSQL is split into messages of at most this many changes,
# each well under NOTIFY's ~8000-byte payload (a change is at most ~60 bytes of JSON).
NOTIFY_CHANGES = 100


def _notifies() -> bool:
    """This process has the in-memory layer and serves no boards (the watcher, a management
    command): its board messages go through PostgreSQL to the process that does."""
    layer = get_channel_layer()
    return isinstance(layer, channel_layer.InMemoryChannelLayer) and not layer.listening


def _chunks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message small enough for a NOTIFY: a board event split by its changes (each part
    numbered on arrival), anything else as it is."""
    changes = message.get("changes")
    if changes is None or len(changes) <= NOTIFY_CHANGES:
        return [message]
    return [
        {**message, "changes": changes[start : start + NOTIFY_CHANGES]}
        for start in range(0, len(changes), NOTIFY_CHANGES)
    ]


def _stamp_relayed(message: dict[str, Any]) -> None:
    """In the server, a board event relayed from another process takes the server's next
    number (that process's own counter would clash with the server's)."""
    if message.get("type") == "board.event":
        message["seq"] = next_sequence(message["project_id"])


def _skip_local_numbers(groups: list[str]) -> None:
    """The server stopped listening a while (its notifications then are lost): the next number
    of every project with open boards skips one, so they see a gap and resynchronise."""
    prefix = board_group(0).removesuffix("0")
    ids = (group.removeprefix(prefix) for group in groups)
    with _local_lock:
        for project_id in {int(i) for i in ids if i.isdigit()}:
            _local_last[project_id] = next(_local_counters[project_id])


channel_layer.relay_hook = _stamp_relayed
channel_layer.resumed_hook = _skip_local_numbers


def _group_send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        pass
    elif _notifies():  # a board event is numbered by the server that relays it
        for chunk in _chunks(message):
            channel_layer.notify(group, chunk)
    elif settings.REDIS_URL:
        _publisher.run(layer.group_send(group, message))
    else:
        # The in-memory layer lives in the server's own loop; async_to_sync reaches it from a
        # view's thread (and needs no connection).
        async_to_sync(layer.group_send)(group, message)


def send(message: dict[str, Any]) -> bool:
    """Publish one board event; False (logged once per outage) when Redis cannot take it."""
    project_id = message["project_id"]
    if settings.REDIS_URL and not REDIS.allow():
        _missed.add(project_id)  # backing off: not even a connection attempt
        return False
    try:
        if not _notifies():  # else numbered by the server that relays it
            message["seq"] = next_sequence(project_id)
        _group_send(board_group(project_id), message)
    except Exception as exc:  # see the module docstring
        if settings.REDIS_URL:
            _missed.add(project_id)
            REDIS.failed(exc)
        else:
            logger.warning("board event for project %s not published", project_id, exc_info=True)
        return False
    if settings.REDIS_URL:
        REDIS.succeeded()
    return True


# -- the watcher's sweeps ------------------------------------------------------------------------


def watcher_swept(project_id: int, *, silent_after: int) -> None:
    """Once the sweep commits, tell the project's open boards that a watcher has just swept it
    (issue 25: a quiet board, with no event to redraw its header, must not call a sweeping
    watcher silent). Not a board event: no sequence number, nothing to render, and a board that
    misses one only waits for the next sweep."""

    def publish() -> None:
        if settings.REDIS_URL and not REDIS.allow():
            return
        try:
            _group_send(
                board_group(project_id), {"type": "watcher.swept", "silent_after": silent_after}
            )
        except Exception:  # a board warns a little early at worst; never fail a sweep
            logger.warning("sweep of project %s not published", project_id, exc_info=True)

    transaction.on_commit(publish)


# -- access ------------------------------------------------------------------------------------


def access_changed(user_id: int, *, ended_session: str | None = None) -> None:
    """Once the current transaction commits, make every open board socket of `user_id` check
    its access again (`boards.board.live.access` says when; the consumer closes the ones that lost
    it).

    `ended_session`: a session that has just signed out, whose sockets close without a check.
    """

    def publish() -> None:
        message = {"type": "access.changed", "ended_session": ended_session}
        try:
            _group_send(user_group(user_id), message)
        except Exception:  # the socket keeps its access until its next check; never fail a write
            logger.warning("access change of user %s not published", user_id, exc_info=True)

    transaction.on_commit(publish)
