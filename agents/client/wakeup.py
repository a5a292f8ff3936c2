"""A flag a signal handler may set: what `threading.Event` is not.

A Python signal handler runs in the main thread between two bytecodes — possibly while that
thread is inside `Event.wait()` or `Event.set()` and holds the Event's own lock. `Event.set()`
in the handler then waits for that lock forever, and the process never stops on SIGTERM or
SIGINT (tests/agents/client/test_wakeup.py drives the race; most likely what the watcher's SIGTERM
test met once in CI). `Wakeup` takes no lock: `set()` writes one byte to a pipe, `wait()` polls
it, and the byte stays, so every waiter, in any thread, now and later, sees it set (an
Event's latch). Used by `liza supervise`, `liza demo-team` and `manage.py liza_watch`.
"""

from __future__ import annotations

import contextlib
import os
import select
import weakref


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Wakeup:
    def __init__(self) -> None:
        self._set = False
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        # The two descriptors go with the object (many supervisors live in one test process).
        weakref.finalize(self, _close, self._read, self._write)

    def set(self) -> None:
        """Safe in a signal handler and from any thread: a plain assignment and one write."""
        if self._set:
            return
        self._set = True
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, b"\0")

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Until set or `timeout` seconds (None: no limit); whether it is set. A signal that
        arrives meanwhile does not end the wait unless its handler sets the flag."""
        if self._set:
            return True
        if timeout is None or timeout > 0:
            # poll(), not select(): no FD_SETSIZE limit in a process with many descriptors.
            poller = select.poll()
            poller.register(self._read, select.POLLIN)
            poller.poll(None if timeout is None else timeout * 1000)
        return self._set
