"""A dependency that is down, as one process sees it: logged once, retried with backoff.

Without it every request that touches an unreachable Redis logs a full traceback (1,262 of them
in a two-minute API run, issue #14) and waits on a connection that will not come. An `Outage`
records the first failure (one WARNING with the error's one-line summary), keeps later ones
silent and counted, lets callers skip the dependency while it backs off (0.5 s doubling to
30 s), and logs the recovery once. `REDIS` is the one for the Redis server behind the channel
layer, the board sequence and the rate-limit counters; the live board (`boards.board.live.health`)
and the metrics read it. `DATABASE` only says why the API answers 503 `unavailable` (the
cause, once, and the recovery): every request still tries PostgreSQL, nothing backs off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings

from liza_site import metrics

logger = logging.getLogger("liza.outages")


class Outage:
    def __init__(
        self,
        name: str,
        *,
        consequence: str = "retrying with backoff",
        first_backoff: float = 0.5,
        max_backoff: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.consequence = consequence  # what the first failure's warning says happens now
        self.on_failure = on_failure  # e.g. a metrics counter
        self.first_backoff = first_backoff
        self.max_backoff = max_backoff
        self.clock = clock
        self._lock = threading.Lock()
        self.down = False
        self.since: float | None = None
        self.failures = 0
        self._backoff = 0.0
        self._retry_at = 0.0

    def allow(self) -> bool:
        """May the caller try the dependency now? Always while it is up; once per backoff
        step while it is down (the try that succeeds ends the outage)."""
        with self._lock:
            return not self.down or self.clock() >= self._retry_at

    def failed(self, exc: BaseException) -> None:
        if self.on_failure is not None:
            self.on_failure()
        with self._lock:
            now = self.clock()
            self.failures += 1
            if not self.down:
                self.down, self.since, self._backoff = True, now, self.first_backoff
                logger.warning(
                    "%s unreachable (%s: %s); %s",
                    self.name,
                    type(exc).__name__,
                    str(exc).splitlines()[0] if str(exc) else "",
                    self.consequence,
                )
            else:
                self._backoff = min(self._backoff * 2, self.max_backoff)
            self._retry_at = now + self._backoff

    def succeeded(self) -> None:
        if not self.down:  # the common case, without the lock
            return
        with self._lock:
            if self.down:
                logger.warning(
                    "%s reachable again after %.1f s (%d failed attempts)",
                    self.name,
                    self.clock() - (self.since or self.clock()),
                    self.failures,
                )
            self.down, self.since, self.failures = False, None, 0


REDIS = Outage(
    "Redis",
    consequence="live updates paused, retrying with backoff",
    on_failure=metrics.REDIS_FAILURES.inc,
)
# Without it a 503 `unavailable` said nothing of its cause in the server's log: a refused
# connection, a full `max_connections`, a lost server all looked alike.
DATABASE = Outage("PostgreSQL", consequence="the API answers 503 until it answers again")


def redis_answers() -> bool | None:
    """Does Redis answer a ping now (1 s at most)? None when none is configured. The answer
    also ends or starts the outage, as any other attempt does."""
    if not settings.REDIS_URL:
        return None
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
    except Exception as exc:  # any connection error: not answering
        REDIS.failed(exc)
        return False
    REDIS.succeeded()
    return True


def _connection_error(exc: BaseException | None) -> bool:
    import redis

    return isinstance(
        exc, OSError | redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
    )


class OncePerOutage(logging.Filter):
    """For a library's own logger (channels_redis): while `REDIS` is down its records are
    dropped, the outage having been logged once already; while it is up they pass. A record
    that carries a connection error starts the outage itself: channels_redis's receive task
    notices Redis gone before anything of ours does, and logged "Unexpected exception in
    receive task" with a traceback once per worker (issue #27 finding 10); now that is the
    outage's one line, as for our own client."""

    def filter(self, record: logging.LogRecord) -> bool:
        if REDIS.down:
            return False
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and _connection_error(exc):
            REDIS.failed(exc)
            return False
        return True
