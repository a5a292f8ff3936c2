"""What an agent's exit means and when a failure recurs too often (seed 000's restart policy:
42 restarts, a crash waits `crash` seconds, `crash_limit` within `crash_window` stop); a
part of `Supervisor` (loop.py)."""

from __future__ import annotations

import collections
import time
from typing import Any

from agents.client.supervisor.options import CRASH_LOOP, STOPPED


class RestartsMixin:
    def _recurring(self, moments: collections.deque[float]) -> int:
        """A failure now, counted in `moments`: how many fell within the crash window."""
        now = time.monotonic()
        moments.append(now)
        while moments and moments[0] < now - self.t.crash_window:
            moments.popleft()
        return len(moments)

    def _own_error(self, trace: str) -> bool:
        """Say the supervisor's own failure; True when it is the crash limit's."""
        self.say(f"internal error:\n{trace.rstrip()}")
        failures = self._recurring(self.own_errors)
        if failures >= self.t.crash_limit:
            self.say(
                f"the supervisor failed {failures} times within {self.t.crash_window:g} s; "
                "stopping (exit 13)"
            )
            return True
        self.say(f"trying again in {self.t.crash:g} s")
        self.sleep(self.t.crash)
        return False

    def session_ended(self, code: int, run: dict[str, Any] | None) -> int | str:
        """What an agent's exit other than 42 means (issue 23: no wrappers, since a coding CLI
        cannot choose its exit code). Whether the role is complete is `/work`'s word (seed
        000's DRAFT wait, and while work may still come: a task open, a goal IN_PROGRESS):
        complete, the supervisor stops; else the next session comes when there is work (42's
        meaning), unless the session crashed: a non-zero exit with no protocol progress (the
        server's `progress`, read from the events of the session; without a run record, any
        non-zero exit)."""
        after = self.client.work().body
        if self.role == "code_reviewer" and after.get("merge"):
            self.merge_approved(after["merge"])
        if after.get("exit") == 0:
            self.say(f"the agent exited {code} (role complete); stopping")
            return STOPPED
        progress = bool(run and run.get("progress"))
        if code == 0 or progress:
            self.say(
                f"the agent exited {code}"
                + (" after protocol progress" if code else "")
                + f", but the role is not complete: {after.get('reason')}"
            )
            self._waiting = after.get("reason")
            if not after.get("work"):
                self.sleep(self._poll(after))
            if after.get("waiting_for_drafts"):
                return "draft_wait"
            return "role_not_complete" if code == 0 else f"session_end: exit {code}"
        crashes = self._recurring(self.crashes)
        if crashes >= self.t.crash_limit:
            self.say(
                f"crash loop: the agent crashed {crashes} times within "
                f"{self.t.crash_window:g} s (last exit {code}); stopping the supervisor"
            )
            return CRASH_LOOP
        self.say(f"the agent crashed (exit {code}); restarting in {self.t.crash:g} s")
        self.sleep(self.t.crash)
        return f"crash: exit {code}"
