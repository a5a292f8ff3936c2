"""SIGINT/SIGTERM: forwarded to the agent (killed if it lingers), then the coder's task handed
off, or the reviewer's review given back, before the supervisor exits; a part of `Supervisor`
(loop.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any

from agents.client import wire
from agents.client.errors import LizaError
from agents.client.supervisor.options import STOPPED, Assignment


class SignalsMixin:
    # -- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        # The handlers take no lock (no Event, no thread start, no Popen.poll): the main thread
        # they interrupt may hold one (agents.client.wakeup). The agent is sent the signal, and
        # SIGKILL by an alarm if it still runs `terminate_grace` seconds later.
        def handler(signum: int, frame: Any) -> None:
            self.stopping = signum
            self._wake.set()
            child = self.child
            if child is not None and child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signum)  # forward; it hands off and exits
                signal.setitimer(signal.ITIMER_REAL, self.t.terminate_grace)

        def kill_if_running(signum: int, frame: Any) -> None:
            child = self.child  # None once the supervisor has seen it exit
            if child is not None and child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGALRM, kill_if_running)

    def _stopped(self, a: Assignment | None = None) -> int:
        """After SIGINT/SIGTERM: hand the coder's task off cleanly, then exit."""
        a = a or self.last
        if a is not None and self.role == "coder" and a.key:
            try:
                task = self.client.task(a.key)
                if task["status"] == wire.CLAIMED and task["assigned_to"] == self.agent["agent_id"]:
                    self.client.handoff(
                        a.key,
                        summary=f"the supervisor of {self.agent['agent_id']} was stopped by "
                        f"signal {signal.Signals(self.stopping or signal.SIGTERM).name}",
                        next_action="resume from the task branch's last commit",
                    )
                    self.say(f"{a.key}: handed off")
            except LizaError as error:
                self.say(f"{a.key}: the handoff failed: {error.code}: {error.message}")
        if a is not None and self.role == "code_reviewer" and a.key:
            self._give_review_back(a.key)
        self.say("stopped by a signal")
        return STOPPED

    def _give_review_back(self, key: str) -> None:
        """A review left open would hold its slot until its lease and grace lapse: another
        reviewer may take it at once. A verdict already given leaves nothing to give back.
        Given back as `stopping`: a stop (an operator's restart, a reboot) is no judgement
        that the reviewer cannot finish it, so restarted it is offered the review again."""
        try:
            self.client.review_release(
                key,
                reason=f"the supervisor of {self.agent['agent_id']} was stopped by signal "
                f"{signal.Signals(self.stopping or signal.SIGTERM).name}",
                stopping=True,
            )
            self.say(f"{key}: review given back")
        except LizaError as error:
            if error.code != "lease_lost":
                self.say(f"{key}: giving the review back failed: {error.code}: {error.message}")
