"""What the board shows of each spawn: its run reported at start and end, with its output
redacted; a part of `Supervisor` (loop.py)."""

from __future__ import annotations

import collections
import os
import re
from typing import Any

from agents.client.errors import LizaError
from agents.client.supervisor.options import Assignment

KEY_PATTERN = re.compile(r"liza_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


class RunsMixin:
    # -- runs (what the board shows of each spawn) --------------------------------------------

    def _run_start(self, a: Assignment, reason: str) -> int | None:
        try:
            run = self.client.run_start(
                task=a.key or None,
                restart_reason=reason,
                command=self.redact(self.shown(self.command))[:500],
            )
        except LizaError as error:
            if error.code == "budget_exhausted":
                raise  # a spent budget: no spawn (the round asks /work again, which waits)
            self.say(f"the run could not be reported: {error.code}: {error.message}")
            return None
        return run["id"]

    def _run_finish(
        self, run: int | None, code: int, tail: collections.deque[str], stopped: str | None
    ) -> dict[str, Any] | None:
        if run is None:
            return None
        try:
            return self.client.run_finish(
                run,
                exit_code=code,
                stopped_by=stopped or "",
                output=self.redact("\n".join(tail)),
            )
        except LizaError as error:
            self.say(f"the run's end could not be reported: {error.code}: {error.message}")
            return None

    def redact(self, text: str) -> str:
        """The key, key-shaped strings and any LIZA_*KEY*/SECRET*/TOKEN* value hidden."""
        secrets = {self.o.key}
        secrets |= {
            value
            for name, value in os.environ.items()
            if name.startswith("LIZA_")
            and any(word in name for word in ("KEY", "SECRET", "TOKEN", "PASSWORD"))
            and len(value) >= 8
            and name != "LIZA_KEY_FILE"
        }
        for secret in sorted(filter(None, secrets), key=len, reverse=True):
            text = text.replace(secret, "[redacted]")
        return KEY_PATTERN.sub("[redacted]", text.replace("\x00", ""))
