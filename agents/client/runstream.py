"""A running run's output, streamed to the server while the agent runs (issue 24).

The supervisor's pump hands every line to `RunStream.line`; a background thread sends what
gathered at most once per `interval` (`POST runs/<id>/output`), redacted by the supervisor's own
`redact`. Bounded twice: per batch (`max_chars`, the server's limit per request) and per second
(`rate`, characters a second, so a chatty agent cannot flood the server); what is over is
dropped and said in one line ("[… N lines not streamed]"). The run's end still reports its
last lines in full (`runs/<id>/finish`), so the stored tail is complete whatever was dropped.

A send that fails is said once and the stream goes on: watching a run is a convenience, never
a reason to stop the agent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from agents.client.errors import LizaError

STREAM_INTERVAL = 1.0  # seconds between two sends of one run
STREAM_RATE = 8_000  # characters a second at most
STREAM_MAX_CHARS = 16_000  # the server's limit per request (RUN_CHUNK_CHARS)


class RunStream:
    def __init__(
        self,
        send: Callable[[str], object],
        redact: Callable[[str], str],
        *,
        interval: float = STREAM_INTERVAL,
        rate: int = STREAM_RATE,
        max_chars: int = STREAM_MAX_CHARS,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self._send = send
        self._redact = redact
        self.interval = interval
        self.budget = min(max_chars, max(1, int(rate * interval)))
        self._say = say
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._size = 0
        self._dropped = 0
        self._done = threading.Event()
        self._failed = False
        self.sent = 0  # batches sent (tests, metrics)
        self._thread = threading.Thread(target=self._loop, name="liza-run-stream", daemon=True)
        self._thread.start()

    def line(self, text: str) -> None:
        """One line the agent printed (without its newline)."""
        with self._lock:
            if self._size + len(text) + 1 > self.budget:
                self._dropped += 1
                return
            self._lines.append(text)
            self._size += len(text) + 1

    def _take(self) -> str:
        with self._lock:
            lines, dropped = self._lines, self._dropped
            self._lines, self._size, self._dropped = [], 0, 0
        if dropped:
            lines.append(f"[… {dropped} lines not streamed (over {self.budget} characters/batch)]")
        return "\n".join(lines)

    def flush(self) -> None:
        text = self._take()
        if not text:
            return
        try:
            self._send(self._redact(text)[:STREAM_MAX_CHARS])
            self.sent += 1
        except LizaError as error:
            if not self._failed:  # said once per run
                self._say(f"live output not streamed: {error.code}: {error.message}")
            self._failed = True

    def _loop(self) -> None:
        while not self._done.wait(self.interval):
            self.flush()

    def close(self) -> None:
        """The agent exited: send what is left, before the run's end is reported."""
        self._done.set()
        self._thread.join(timeout=5)
        self.flush()
