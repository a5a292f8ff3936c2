"""A dependency that is down, as one process sees it: logged once, retried with backoff.

Without it every request that touches an unreachable Redis logs a full traceback (1,262 of them
in a two-minute API run, issue #14) and waits on a connection that will not come. An `Outage`
records the first failure (one WARNING with the error's one-line summary), keeps later ones
silent and counted, lets callers skip the dependency while it backs off (0.5 s doubling to
30 s), and logs the recovery once. `REDIS` is the one for the Redis server behind the channel
layer, the board sequence and the rate-limit cache; the live board (`boards.live.health`) and
the metrics read it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("liza.outages")


class Outage:
    def __init__(
        self,
        name: str,
        *,
        first_backoff: float = 0.5,
        max_backoff: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
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
        with self._lock:
            now = self.clock()
            self.failures += 1
            if not self.down:
                self.down, self.since, self._backoff = True, now, self.first_backoff
                logger.warning(
                    "%s unreachable (%s: %s); live updates paused, retrying with backoff",
                    self.name,
                    type(exc).__name__,
                    str(exc).splitlines()[0] if str(exc) else "",
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


REDIS = Outage("Redis")


class OncePerOutage(logging.Filter):
    """For a library's own logger (channels_redis): while `REDIS` is down its records are
    dropped, the outage having been logged once already; while it is up they pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not REDIS.down
