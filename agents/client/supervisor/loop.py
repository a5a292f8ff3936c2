"""The supervisor: its state, the main loop (one round: wait, merge or claim-spawn-judge) and
the agent's identity. Each other part of it is a mixin of its own module in this package."""

from __future__ import annotations

import collections
import os
import subprocess
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.client import gitops
from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client
from agents.client.liverun import LiveRun, quota_pause
from agents.client.supervisor.agent import AgentMixin
from agents.client.supervisor.claims import ClaimsMixin
from agents.client.supervisor.explain import ExplainMixin
from agents.client.supervisor.options import (
    OWN_ERRORS,
    STOPPED,
    Assignment,
    Options,
    normalise_role,
)
from agents.client.supervisor.restarts import RestartsMixin
from agents.client.supervisor.runs import RunsMixin
from agents.client.supervisor.signals import SignalsMixin
from agents.client.wakeup import Wakeup


class Supervisor(ClaimsMixin, AgentMixin, RunsMixin, RestartsMixin, SignalsMixin, ExplainMixin):
    def __init__(
        self,
        options: Options,
        *,
        client: Client | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.o = options
        self.t = options.timing
        self.client = client or Client(options.url, options.project, options.key)
        self._say = say or (lambda line: print(f"liza supervise: {line}", flush=True))
        self.stopping: int | None = None  # the signal number once asked to stop
        self.child: subprocess.Popen[bytes] | None = None
        self.crashes: collections.deque[float] = collections.deque()
        self.own_errors: collections.deque[float] = collections.deque()
        self.held: set[str] = set()  # tasks this process has spawned on (kept on restart)
        self.spawns = 0
        self.last: Assignment | None = None  # the latest spawn's, handed off on a signal
        # With a remote: each task branch's commit on the remote as this supervisor last saw
        # or pushed it (the push's lease), and the branches whose push has not gone through.
        self.pushed: dict[str, str | None] = {}
        self.unpushed: set[str] = set()
        self.agent: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self._wake = Wakeup()  # set by the signal handler: no lock (agents.client.wakeup)
        self._waiting: str | None = None  # the wait's reason last said (said once per change)
        self.live: LiveRun | None = None  # the running spawn's stream and watchdog (issue 24)

    def say(self, line: str) -> None:
        self._say(line)

    def say_waiting(self, reason: str | None) -> None:
        """Why it waits without spawning, said when it changes (it asks at every poll)."""
        if reason and reason != self._waiting:
            self.say(f"waiting: {reason}")
        self._waiting = reason

    # -- the main loop ------------------------------------------------------------------------

    def run(self) -> int:
        try:
            self.repo = gitops.repo_root(self.o.repo or Path.cwd())
        except gitops.GitError as error:
            raise UsageError(f"not in a git repository: {error}") from error
        if self.o.remote:
            try:
                gitops.git(self.repo, "remote", "get-url", self.o.remote)
            except gitops.GitError as error:
                raise UsageError(f"no git remote {self.o.remote!r}: {error}") from error
        if self.o.dry_run:
            return self.dry_run()
        if self.o.explain:
            return self.explain()
        self.register()
        self._install_signals()
        self.config = self.client.get("config")
        self.integration = self.config.get("integration_branch") or "integration"
        self.state = gitops.state_dir(self.repo, self.agent["agent_id"])
        self.key_file = self._key_file()
        code = self.rounds()
        if code != EXIT["not_registered"]:  # it has left already: nothing to give up
            self.leave()
        return code

    def rounds(self) -> int:
        """The main loop, until the supervisor stops: its exit code."""
        reason = "start"
        while True:
            if self.stopping is not None:
                return self._stopped()
            try:
                outcome = self.step(reason)
            except gitops.PushError as error:
                # The remote away for a while: the next round tries again.
                self.say(f"git remote {self.o.remote}: {error}; trying again")
                self.sleep(self.t.poll if self.t.poll is not None else self.t.crash)
                continue
            except gitops.GitError as error:
                self.say(f"git: {error}")
                return EXIT["usage"]
            except LizaError as error:
                if error.exit in (
                    EXIT["usage"],
                    EXIT["refused"],
                    EXIT["collision"],
                    EXIT["not_registered"],
                ):
                    raise
                # A lost race, a stop between /work and the claim, the server away: ask again.
                self.say(f"{error.code}: {error.message}; asking again")
                self.sleep(self.t.poll if self.t.poll is not None else self.t.crash)
                continue
            except Exception:
                # Anything else is the supervisor's own failure (a bug, or the machine: a file
                # another process removed, a full disk). One round's must not take a team down
                # for good, so it is said with its traceback and the round tried again, counted
                # like the agent's crashes: recurring, it stops the supervisor (exit 13).
                if self._own_error(traceback.format_exc()):
                    return OWN_ERRORS
                continue
            if isinstance(outcome, int):
                return outcome
            reason = outcome

    def step(self, reason: str) -> int | str:
        """One round: wait, merge or claim-spawn-judge. An exit code ends the supervisor; a
        string is why the next spawn happens (its run's restart reason)."""
        self.push_pending()
        if quota_pause(self):  # a provider's quota wall: no claim, no spawn until it lifts
            return reason
        body = self.client.work().body
        if body.get("exit") == EXIT["stop"]:
            if body.get("stop") == "aborted":
                self.say(f"stopping: {body.get('reason')}")
                return STOPPED
            self.say(f"waiting: {body.get('reason')}")
            self.sleep(self._poll(body))
            return reason
        if self.role == "code_reviewer" and body.get("merge"):
            self.merge_approved(body["merge"])
            return reason
        if not body.get("work"):
            if body.get("exit") == 0:
                self.say(f"{self.agent['agent_id']}: role complete; stopping")
                return STOPPED
            self.say_waiting(body.get("reason"))
            self.sleep(self._poll(body))
            return reason
        self._waiting = None
        assignment = self.claim()
        if assignment is None:
            self.sleep(self._poll(body))
            return reason
        code, lost, run = self.spawn(assignment, reason)
        if self.o.remote and self.role == "coder" and assignment.key:
            self.push(assignment.key)  # whatever the exit code: the work must not be lost
        if self.stopping is not None:
            return self._stopped(assignment)
        if lost == "not_registered":
            # Its agent left while it ran: the session is over, not to be restarted (a new
            # spawn would work under an identity nobody holds). Registering again is a new
            # supervisor's decision, not this one's.
            self.say(
                f"{self.agent['agent_id']} is not registered (it left): the agent was stopped; "
                f"stopping (exit {EXIT['not_registered']})"
            )
            return EXIT["not_registered"]
        if lost:
            self.say(f"{lost}: the agent was stopped; restarting")
            self.sleep(self.t.restart)
            return lost
        if code == EXIT["stop"]:
            self.sleep(self.t.restart)
            return "exit_42"
        return self.session_ended(code, run)

    @property
    def role(self) -> str:
        return self.agent["role"]

    def _poll(self, body: dict[str, Any]) -> float:
        if self.t.poll is not None:
            return self.t.poll
        return float(body.get("retry_after") or self.config.get("coder_poll_interval") or 30)

    def sleep(self, seconds: float) -> None:
        """Sleeps, cut short by a signal."""
        self._wake.wait(max(0.0, seconds))

    # -- identity ------------------------------------------------------------------------------

    def register(self) -> None:
        """Register the key's agent; `--role`/`--id` only assert who it is. Both are checked
        against `/work` (a read) first, so a wrong one registers nothing: a registration would
        hold the identity for a lease's length (exit 6 for its real supervisor)."""
        wanted = normalise_role(self.o.role)
        if wanted or self.o.agent_id:
            body = self.client.work().body
            role, agent_id = body.get("role"), body.get("agent")
            if wanted and role != wanted:
                raise UsageError(f"the key's agent is a {role}, not a {wanted}")
            if self.o.agent_id and agent_id != self.o.agent_id:
                raise UsageError(f"the key is {agent_id}'s, not {self.o.agent_id}'s")
        agent = self.client.register(terminal=f"liza supervise (pid {os.getpid()})")
        role = agent["role"]
        if self.o.agent_id and self.o.agent_id != agent["agent_id"]:
            raise UsageError(f"the key is {agent['agent_id']}, not {self.o.agent_id}")
        self.agent = agent
        self.say(f"registered {agent['agent_id']} ({role})")

    def leave(self) -> None:
        """The supervisor stops (a signal, its role complete, an abort, a failure that ends it):
        its agent's identity is given up now, as the original Liza deletes its registry entry
        on exit, so the same id started again at once registers instead of exiting 6 until the
        lease lapses. Its task was handed off or its review given back first (`_stopped`);
        a refusal or a server away changes nothing of its exit, said in one line."""
        try:
            self.client.leave()
        except LizaError as error:
            self.say(f"leaving failed: {error.code}: {error.message}")
            return
        self.say(f"{self.agent['agent_id']} left: its id is free to register again")

    def _key_file(self) -> str:
        """The key for the agent command, in a 0600 file (never in its environment)."""
        if self.o.key_file:
            return str(Path(self.o.key_file).resolve())
        path = self.state / "key"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(self.o.key + "\n")
        os.chmod(path, 0o600)
        return str(path)
