"""What the supervisor watches while one run of its agent runs (issue 24), behind the few hooks
it has in `supervisor/` (spawn, pump, heartbeat, and the pause before a claim): the live
output stream (`agents.client.runstream`), the progress watchdog (`agents.client.watchdog`),
the provider's quota wall (`agents.client.quota`) and the usage the CLI prints
(`agents.client.usage`), reported with each heartbeat and at the run's end so a budget can stop
the agent while it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.client.errors import LizaError
from agents.client.quota import QuotaWatch, profile_of
from agents.client.runstream import RunStream
from agents.client.usage import UsageTally
from agents.client.watchdog import Watchdog

STALL_TIMEOUT = 600.0  # the server's default; the project's `stall_timeout` wins


class LiveRun:
    def __init__(
        self,
        supervisor: Any,
        run: int | None,
        *,
        worktree: Path | None,
        on_stop: Callable[[str], None],
    ) -> None:
        """`on_stop(reason)`: stop the agent now ("stalled"), the supervisor's terminate."""
        s = supervisor
        self.stream = (
            RunStream(lambda text: s.client.run_output(run, text=text), s.redact, say=s.say)
            if run is not None
            else None
        )
        self.run = run
        self.quota = QuotaWatch(profile_of(s.o.command), backoffs=getattr(s, "quota_backoffs", 0))
        self.usage = UsageTally(profile_of(s.o.command))
        self._usage_lock = threading.Lock()
        self._usage_unsent = False
        self._on_stop = on_stop
        self._supervisor = s
        timeout = float(s.config.get("stall_timeout") or STALL_TIMEOUT)
        self.watchdog = Watchdog(
            timeout=timeout,
            on_stall=lambda: self._stall(s, on_stop, timeout),
            worktree=worktree,
            progress_file=progress_file(s),
        )

    @staticmethod
    def _stall(s: Any, on_stop: Callable[[str], None], timeout: float) -> None:
        s.say(f"no output, commit or protocol operation for {timeout:g} s: stalled; stopping it")
        on_stop("stalled")

    def line(self, text: str) -> None:
        self.watchdog.progress()
        if self.stream is not None:
            self.stream.line(text)
        with self._usage_lock:
            if self.usage.line(text):
                self._usage_unsent = True
        if self.quota.line(text):
            # The provider's wall: nothing more will come of this session; the supervisor
            # pauses before its next claim (`quota_pause`), it does not restart into it.
            hit = self.quota.hit
            s = self._supervisor
            s.quota_hit = hit
            s.say(f"quota: {hit.provider} says {hit.line!r}; no spawn before {hit.until:%H:%M:%S}Z")
            self._on_stop("quota")

    def report_usage(self) -> None:
        """Send the run's usage so far when it moved (the heartbeat thread, before each
        heartbeat, so the heartbeat's answer already weighs it; and at the run's end). Running
        totals: a report lost or repeated is made good by the next. A failure is said and
        tried again next time."""
        with self._usage_lock:
            if not self._usage_unsent or self.run is None:
                return
            entries = [
                replace(
                    usage,
                    model=usage.model[:100],
                    cost_usd=None if usage.cost_usd is None else round(usage.cost_usd, 6),
                ).entry()
                for usage in list(self.usage.by_model.values())[:20]
            ]
            self._usage_unsent = False
        try:
            self._supervisor.client.usage_report(self.run, usage=entries)
        except LizaError as error:
            self._usage_unsent = True
            self._supervisor.say(f"usage not reported: {error.code}: {error.message}")

    def heartbeat_fields(self) -> dict[str, str]:
        return {"progress_at": self.watchdog.progress_at()}

    def close(self) -> None:
        self.watchdog.stop()
        self.report_usage()
        if self.stream is not None:
            self.stream.close()


def progress_file(s: Any) -> Path:
    """Where the agent's `liza` marks its protocol operations (LIZA_PROGRESS_FILE)."""
    return Path(s.state) / "progress"


def quota_pause(s: Any) -> bool:
    """Before a claim: while the provider's wall stands (`s.quota_hit`), report it once, wait
    (cut short by a signal) and say so; True while it waits (the round ends without a claim).
    When the wall lifts it says so and clears it: the next round claims and spawns again."""
    hit = getattr(s, "quota_hit", None)
    if hit is None:
        return False
    now = datetime.now(UTC)
    if now >= hit.until:
        s.say(f"quota: {hit.provider}'s wall lifted at {hit.until:%H:%M:%S}Z; resuming")
        s.quota_hit = None
        s.quota_backoffs = 0 if hit.from_message else getattr(s, "quota_backoffs", 0) + 1
        return False
    if not getattr(hit, "reported", False):
        hit.reported = True
        try:
            s.client.quota_pause(
                until=hit.until.isoformat().replace("+00:00", "Z"),
                provider=hit.provider,
                message=s.redact(hit.line)[:300],
            )
        except LizaError as error:
            s.say(f"quota: the pause could not be reported: {error.code}: {error.message}")
    s.sleep(min((hit.until - now).total_seconds() + 0.05, QUOTA_POLL))
    return True


QUOTA_POLL = 60.0  # seconds between two looks at the clock during a long pause
