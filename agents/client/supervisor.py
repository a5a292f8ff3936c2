"""`liza supervise`: seed 000's supervisor for one agent, over the HTTP API (issue 12 §2).

It owns what an agent may not do itself: it registers the key's agent, waits for work without
spawning (polling `/work`, honouring Retry-After, waiting out a pause or a checkpoint, stopping
on an abort), claims **before** spawning (coders through claim-next with `base_commit`
computed first, reviewers through review claim-next), prepares the task's git worktree, writes
the prompt, spawns the agent command with the `LIZA_*` environment, heartbeats in the
background, restarts by exit code (0 stop, unless `/work` says work may still come to the role:
then it waits; 42 after 2 s, a crash after 5 s; 3 crashes in 5 min stop it), merges what its
reviewer approved, and reports each spawn to the server as a run.

The spawned command's environment (README "Supervisor"): LIZA_URL, LIZA_PROJECT, LIZA_KEY_FILE
(a 0600 file: the key itself is never in the environment), LIZA_ROLE, LIZA_AGENT_ID, LIZA_TASK,
LIZA_WORKTREE, LIZA_PROMPT_FILE, LIZA_INTEGRATION_BRANCH, LIZA_BASE_COMMIT, LIZA_REPO,
LIZA_REMOTE (empty without a shared remote).
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.client import gitops, wire
from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client
from agents.client.liverun import LiveRun, progress_file, quota_pause
from agents.client.wakeup import Wakeup

# The supervisor's own exit codes, beyond the protocol's table (agents.client.errors.EXIT).
STOPPED = 0  # role complete, sprint or goal aborted, or a signal handled cleanly
CRASH_LOOP = 12  # the agent crashed `crash_limit` times within `crash_window` seconds
OWN_ERRORS = 13  # the supervisor itself failed `crash_limit` times within `crash_window`

ROLE_ALIASES = {"code-reviewer": "code_reviewer", "reviewer": "code_reviewer"}
OUTPUT_LINES = 200
KEY_PATTERN = re.compile(r"liza_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


def normalise_role(role: str | None) -> str | None:
    if role is None:
        return None
    role = role.strip().lower()
    return ROLE_ALIASES.get(role, role)


@dataclass
class Timing:
    """Every delay of the supervisor; the defaults are seed 000's, tests shorten them."""

    poll: float | None = None  # None: the server's Retry-After
    restart: float = 2.0  # after exit 42
    crash: float = 5.0  # after any other exit
    crash_limit: int = 3
    crash_window: float = 300.0
    heartbeat: float | None = None  # None: min(heartbeat_interval, lease / 3)
    terminate_grace: float = 10.0  # an agent's time to exit after SIGTERM, before SIGKILL


@dataclass
class Options:
    url: str
    project: str
    key: str
    command: list[str]
    key_file: str | None = None
    role: str | None = None
    agent_id: str | None = None
    repo: Path | None = None
    remote: str | None = None  # the shared remote when agents run on several machines
    dry_run: bool = False
    timing: Timing = field(default_factory=Timing)


@dataclass
class Assignment:
    """What one spawn works on: a task (coder, reviewer) or none (planner)."""

    task: dict[str, Any] | None = None
    worktree: Path | None = None
    review: dict[str, Any] | None = None
    handoff: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        return self.task["key"] if self.task else ""


class Supervisor:
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
        self.register()
        self._install_signals()
        self.config = self.client.get("config")
        self.integration = self.config.get("integration_branch") or "integration"
        self.state = gitops.state_dir(self.repo, self.agent["agent_id"])
        self.key_file = self._key_file()
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
                if error.exit in (EXIT["usage"], EXIT["refused"], EXIT["collision"]):
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
        code, lost = self.spawn(assignment, reason)
        if self.o.remote and self.role == "coder" and assignment.key:
            self.push(assignment.key)  # whatever the exit code: the work must not be lost
        if self.stopping is not None:
            return self._stopped(assignment)
        if lost:
            self.say(f"{lost}: the agent was stopped; restarting")
            self.sleep(self.t.restart)
            return lost
        if code == 0:
            after = self.client.work().body
            if self.role == "code_reviewer" and after.get("merge"):
                self.merge_approved(after["merge"])
            # Whether the role is complete is `/work`'s word (seed 000's DRAFT wait, and while
            # work may still come: a task open, a goal IN_PROGRESS), not the agent's reading
            # of seed 000's literal table: a coder exiting 0 with its task in review stays.
            if self.role == "planner" or after.get("exit") == 0:
                self.say("the agent exited 0 (role complete); stopping")
                return STOPPED
            self.say(f"the agent exited 0, but the role is not complete: {after.get('reason')}")
            self._waiting = after.get("reason")
            if not after.get("work"):
                self.sleep(self._poll(after))
            return "draft_wait" if after.get("waiting_for_drafts") else "role_not_complete"
        if code == EXIT["stop"]:
            self.sleep(self.t.restart)
            return "exit_42"
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
        """Register the key's agent; `--role`/`--id` only assert who it is (the role is read
        from `/work` first, so a wrong `--role` registers nothing)."""
        wanted = normalise_role(self.o.role)
        if wanted:
            role = self.client.work().body.get("role")
            if role != wanted:
                raise UsageError(f"the key's agent is a {role}, not a {wanted}")
        agent = self.client.register(terminal=f"liza supervise (pid {os.getpid()})")
        role = agent["role"]
        if self.o.agent_id and self.o.agent_id != agent["agent_id"]:
            raise UsageError(f"the key is {agent['agent_id']}, not {self.o.agent_id}")
        self.agent = agent
        self.say(f"registered {agent['agent_id']} ({role})")

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

    # -- claims --------------------------------------------------------------------------------

    def claim(self) -> Assignment | None:
        """Claim before spawning. None: nothing to take now (or the task was blocked)."""
        if self.role == "planner":
            return Assignment()
        if self.role == "code_reviewer":
            body = self.client.review_claim_next()
            if not body.get("review"):
                return None
            task = body["task"]
            if self.o.remote:
                worktree = gitops.prepare_review_worktree(
                    self.repo, task["key"], remote=self.o.remote, commit=task["review_commit"]
                )
                if worktree is None:
                    self.say(
                        f"{task['key']}: the review commit {task['review_commit']} is not on "
                        f"{self.o.remote} yet (its coder's supervisor pushes when the agent "
                        "exits); waiting"
                    )
                    return None
            else:
                worktree = gitops.worktree_path(self.repo, task["key"])
            self.say(f"claimed the review of {task['key']} at {task['review_commit']}")
            return Assignment(task=task, review=body["review"], worktree=worktree)
        if self.o.remote:
            gitops.fetch(self.repo, self.o.remote)
        # before the claim (T4)
        base = gitops.base_commit(self.repo, self.integration, self.o.remote)
        task = self.client.claim_next(base_commit=base)
        if task is None:
            return None
        key = task["key"]
        keep = key in self.held or task["iteration"] > 1 or task["integration_fix"]
        try:
            worktree = gitops.prepare_worktree(
                self.repo, key, base=task["base_commit"] or base, keep=keep, remote=self.o.remote
            )
        except gitops.GitError as error:
            self.say(f"{key}: the worktree cannot be prepared; blocking it: {error}")
            self.client.block(
                key,
                reason=f"the supervisor could not prepare the worktree: {error}"[:2000],
                questions=["Can the repository or the task's branch be repaired?"],
                attempted=[f"prepare .worktrees/{key} on {gitops.branch_of(key)}"],
            )
            return None
        if self.o.remote:
            self.pushed[key] = gitops.remote_commit(self.repo, self.o.remote, gitops.branch_of(key))
        handoff = None
        if task.get("handoff_pending"):
            try:
                handoff = self.client.pickup(key)
            except LizaError as error:
                self.say(f"{key}: the handoff could not be read: {error.message}")
        self.say(f"claimed {key} (iteration {task['iteration']}) in {worktree}")
        return Assignment(task=task, worktree=worktree, handoff=handoff)

    # -- merges (the approving reviewer's supervisor, seed 000 T10/T11) ------------------------

    def merge_approved(self, keys: list[str]) -> None:
        for key in keys:
            task = self.client.task(key)
            try:
                if self.o.remote:
                    merged = gitops.merge_task_remote(
                        self.repo,
                        key,
                        integration=self.integration,
                        review_commit=task.get("review_commit") or "",
                        remote=self.o.remote,
                    )
                else:
                    merged = gitops.merge_task(
                        self.repo,
                        key,
                        integration=self.integration,
                        review_commit=task.get("review_commit") or "",
                    )
            except gitops.PushError as error:
                # Not the work's fault: the task stays APPROVED, /work lists it again.
                self.say(f"{key}: not merged yet, the remote did not take it: {error}")
                continue
            except gitops.GitError as error:
                self.say(f"{key}: INTEGRATION_FAILED: {error}")
                self.client.integration_failed(key, reason=str(error)[:2000])
                continue
            self.client.merge(key, merge_commit=merged)
            self.say(f"{key}: MERGED into {self.integration} at {merged[:12]}")
            try:
                gitops.remove_worktree(self.repo, key)
                if self.o.remote:
                    gitops.remove_review_worktree(self.repo, key)
                    gitops.delete_remote_branch(self.repo, self.o.remote, gitops.branch_of(key))
            except gitops.GitError as error:
                self.say(f"{key}: merged, but its worktree could not be removed: {error}")

    # -- the shared remote (a coder's pushes) ---------------------------------------------------

    def push(self, key: str) -> None:
        """Push the coder's `task/<key>` after its agent exits, unless the task is no longer
        this agent's (its new holder's branch is not to be overwritten). A failed push is said
        and tried again at every round while the task stays ours."""
        try:
            task = self.client.task(key)
        except LizaError as error:
            self.say(f"{key}: not pushed now, the task could not be read: {error.message}")
            self.unpushed.add(key)
            return
        if (
            task.get("assigned_to") != self.agent["agent_id"]
            or task["status"] in wire.TERMINAL_TASK_STATES
        ):
            self.unpushed.discard(key)
            return
        try:
            self.pushed[key] = gitops.push_task(
                self.repo, key, remote=self.o.remote or "", expected=self.pushed.get(key)
            )
        except gitops.GitError as error:
            self.unpushed.add(key)
            self.say(
                f"{key}: PUSH FAILED: {gitops.branch_of(key)} is not on {self.o.remote}; a "
                f"reviewer cannot see this work until it is (retrying every round): {error}"
            )
            return
        self.unpushed.discard(key)
        self.say(f"{key}: pushed {gitops.branch_of(key)} to {self.o.remote}")

    def push_pending(self) -> None:
        for key in sorted(self.unpushed):
            self.push(key)

    # -- one spawn -----------------------------------------------------------------------------

    def environment(self, a: Assignment, prompt: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "LIZA_KEY"}
        env.update(
            LIZA_URL=self.o.url,
            LIZA_PROJECT=self.o.project,
            LIZA_KEY_FILE=self.key_file,
            LIZA_ROLE=self.role,
            LIZA_AGENT_ID=self.agent["agent_id"],
            LIZA_TASK=a.key,
            LIZA_WORKTREE=str(a.worktree) if a.worktree else "",
            LIZA_PROMPT_FILE=str(prompt),
            LIZA_INTEGRATION_BRANCH=self.integration,
            LIZA_BASE_COMMIT=(a.task or {}).get("base_commit") or "",
            LIZA_REPO=str(self.repo),
            LIZA_REMOTE=self.o.remote or "",
            LIZA_PROGRESS_FILE=str(progress_file(self)),
        )
        return env

    def spawn(self, a: Assignment, reason: str) -> tuple[int, str | None]:
        """Run the agent command once; (exit code, why it was stopped or None)."""
        self.spawns += 1
        if a.key:
            self.held.add(a.key)
        prompt = self.state / f"prompt-{self.spawns}.md"
        prompt.write_text(build_prompt(self, a))
        cwd = a.worktree if self.role == "coder" and a.worktree else self.repo
        run = self._run_start(a, reason)
        tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)
        self.say(f"spawning {' '.join(self.o.command)} ({reason})")
        self.last = a
        try:
            self.child = subprocess.Popen(
                self.o.command,
                cwd=cwd,
                env=self.environment(a, prompt),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: signals reach its children
            )
        except OSError as error:
            # A command that cannot start is a crash like any other (the shell's 127).
            tail.append(f"liza supervise: cannot run {self.o.command[0]}: {error}")
            self._run_finish(run, 127, tail, None)
            return 127, None
        lost: list[str] = []

        def stop(why: str) -> None:
            lost.append(why)
            self.terminate_child()

        worktree = a.worktree if self.role == "coder" else None
        self.live = LiveRun(self, run, worktree=worktree, on_stop=stop)
        reader = threading.Thread(target=self._pump, args=(self.child, tail), daemon=True)
        reader.start()
        done = threading.Event()
        beater = threading.Thread(target=self._beat, args=(a, done, lost), daemon=True)
        beater.start()
        code = self.child.wait()
        done.set()
        reader.join(timeout=5)
        beater.join(timeout=5)
        self.live.close()
        self.live = None
        self.child = None
        stopped = lost[0] if lost else None
        self._run_finish(run, code, tail, stopped)
        return code, stopped

    def _pump(self, child: subprocess.Popen[bytes], tail: collections.deque[str]) -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.decode(errors="replace")
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line.rstrip("\n"))
            if (live := self.live) is not None:
                live.line(line.rstrip("\n"))

    def heartbeat_interval(self, a: Assignment) -> float:
        if self.t.heartbeat is not None:
            return self.t.heartbeat
        lease = (a.task or {}).get("lease_duration_override") or self.config.get(
            "lease_duration", 1800
        )
        return max(1.0, min(float(self.config.get("heartbeat_interval", 60)), lease / 3))

    def _beat(self, a: Assignment, done: threading.Event, lost: list[str]) -> None:
        interval = self.heartbeat_interval(a)
        while not done.wait(interval):
            try:
                live = self.live
                beat = self.client.heartbeat(**(live.heartbeat_fields() if live else {}))
            except LizaError as error:
                if error.exit == EXIT["stop"]:
                    lost.append(error.code)
                    self.terminate_child()
                    return
                self.say(f"heartbeat failed: {error.code}: {error.message}")
                continue
            if beat.get("stop"):
                lost.append(beat["stop"])
                self.terminate_child()
                return
            if self.role == "coder" and a.key and beat.get("task") not in (None, a.key):
                lost.append("lease_lost")
                self.terminate_child()
                return

    def terminate_child(self, signum: int = signal.SIGTERM) -> None:
        child = self.child
        if child is None or child.poll() is not None:
            return
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            return
        threading.Thread(target=self._kill_later, args=(child,), daemon=True).start()

    def _kill_later(self, child: subprocess.Popen[bytes]) -> None:
        try:
            child.wait(timeout=self.t.terminate_grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)

    # -- runs (what the board shows of each spawn) --------------------------------------------

    def _run_start(self, a: Assignment, reason: str) -> int | None:
        try:
            run = self.client.run_start(
                task=a.key or None,
                restart_reason=reason,
                command=self.redact(" ".join(self.o.command))[:500],
            )
        except LizaError as error:
            self.say(f"the run could not be reported: {error.code}: {error.message}")
            return None
        return run["id"]

    def _run_finish(
        self, run: int | None, code: int, tail: collections.deque[str], stopped: str | None
    ) -> None:
        if run is None:
            return
        try:
            self.client.run_finish(
                run,
                exit_code=code,
                stopped_by=stopped or "",
                output=self.redact("\n".join(tail)),
            )
        except LizaError as error:
            self.say(f"the run's end could not be reported: {error.code}: {error.message}")

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
        self.say("stopped by a signal")
        return STOPPED

    # -- dry run -------------------------------------------------------------------------------

    def dry_run(self) -> int:
        """What the supervisor would do now, without registering, claiming or spawning."""
        config = self.client.get("config")
        integration = config.get("integration_branch") or "integration"
        body = self.client.work(role=normalise_role(self.o.role)).body
        self.say(f"repository {self.repo}, integration branch {integration}")
        self.say(f"/work: {body.get('reason')} (work={body.get('work')}, exit={body.get('exit')})")
        role = normalise_role(self.o.role) or "the key's role"
        try:
            base = gitops.base_commit(self.repo, integration, self.o.remote)
        except gitops.GitError as error:
            base = f"unavailable ({error})"
        if self.o.remote:
            self.say(
                f"shared remote {self.o.remote}: would fetch before each claim, push task "
                f"branches after each coder spawn, merge into {self.o.remote}/{integration}"
            )
        if role == "coder":
            self.say(f"would claim-next with base_commit {base}, prepare .worktrees/<task>")
        elif role == "code_reviewer":
            self.say(f"would merge {body.get('merge') or 'nothing'}, then review claim-next")
        self.say(f"would spawn: {' '.join(self.o.command)}")
        return STOPPED


# -- the prompt (the original's prompt builder sections, §2.4) ------------------------------------


def _field(task: dict[str, Any], name: str) -> str:
    value = task.get(name)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value) if value not in (None, "") else "-"


def build_prompt(s: Supervisor, a: Assignment) -> str:
    agent = s.agent
    try:
        goal = s.client.goal().get("description", "-")
    except LizaError:
        goal = "no goal yet"
    sections = [
        "=== BOOTSTRAP CONTEXT ===",
        f"Mode: Liza {agent['role']}",
        f"Agent: {agent['agent_id']}",
        f"Project: {s.o.project} on {s.o.url}",
        f"Repository: {s.repo} (integration branch: {s.integration})",
        f"Goal: {goal}",
        "Protocol: the `liza` command, configured by LIZA_URL, LIZA_PROJECT and LIZA_KEY_FILE "
        "(already set); `liza --help` lists its exit codes.",
        "Rules: when any `liza` command exits 42 (lease lost, paused, checkpoint, aborted), "
        "stop and exit 42. Exit 0 only when your role has no more work. Never claim, merge or "
        "create worktrees: the supervisor does. Work silently.",
        "",
    ]
    task = a.task or {}
    if agent["role"] == "coder" and task:
        sections += [
            "=== ASSIGNED TASK ===",
            f"Task: {task['key']}",
            f"Worktree: {a.worktree}",
            f"Branch: {gitops.branch_of(task['key'])} (base commit {_field(task, 'base_commit')})",
            f"Iteration: {task['iteration']}",
            f"Description: {task['description']}",
            f"DONE WHEN: {_field(task, 'done_when')}",
            f"SCOPE: {_field(task, 'scope')}",
            f"Spec: {_field(task, 'spec_ref')}",
            "When done: commit, check `git status --porcelain` is empty, then "
            f"`liza submit {task['key']} --commit <sha> --tree-clean` and exit 42.",
        ]
        if task.get("integration_fix"):
            sections.append(
                f"INTEGRATION FIX: merge {f'{s.o.remote}/' if s.o.remote else ''}"
                f"{s.integration} into this branch and resolve the conflicts only; the "
                "implementation was already reviewed."
            )
        if task["iteration"] > 1 and task.get("rejection_reason"):
            sections += [
                "",
                "=== PRIOR REJECTION FEEDBACK (MUST ADDRESS) ===",
                task["rejection_reason"],
            ]
        if a.handoff:
            sections += [
                "",
                "=== HANDOFF ===",
                f"From: {a.handoff.get('agent')}",
                f"Summary: {a.handoff.get('summary')}",
                f"Next action: {a.handoff.get('next_action')}",
            ]
        sections.append("")
    elif agent["role"] == "code_reviewer" and task:
        sections += [
            "=== REVIEW TASK ===",
            f"Task: {task['key']}",
            f"Worktree: {a.worktree}",
            f"Base commit: {_field(task, 'base_commit')}",
            f"Review commit: {_field(task, 'review_commit')}",
            f"Author: {_field(task, 'assigned_to')}",
            f"Iteration: {task['iteration']}",
            f"Description: {task['description']}",
            f"DONE WHEN: {_field(task, 'done_when')}",
            f"Prior rejection: {_field(task, 'rejection_reason')}",
            "Review the whole diff base_commit..review_commit against the spec. Verdict: "
            f"`liza review verdict {task['key']} APPROVED --commit <review commit>` or "
            f"`liza review verdict {task['key']} REJECTED --commit <review commit> --reason "
            "'Blockers: N ...'`, then exit 42. The supervisor merges what you approve.",
            "",
        ]
    elif agent["role"] == "planner":
        tasks = s.client.tasks()
        sections += ["=== PLANNING CONTEXT ===", f"WAKE TRIGGER: {wake_trigger(tasks)}"]
        counts = collections.Counter(t["status"] for t in tasks)
        sections.append(
            "SPRINT STATE: "
            + (", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "no tasks")
        )
        sections += [
            "Plan with `liza task create/finalize/dependencies`, resolve BLOCKED tasks with "
            "`liza task rescope/abandon`; exit 0 when the goal is complete.",
            "",
        ]
    return "\n".join(sections)


def wake_trigger(tasks: list[dict[str, Any]]) -> str:
    """The first trigger that applies, in the original's order."""
    statuses = [t["status"] for t in tasks]
    if not tasks:
        return "INITIAL_PLANNING"
    if wire.BLOCKED in statuses:
        return "BLOCKED_TASKS"
    if wire.INTEGRATION_FAILED in statuses:
        return wire.INTEGRATION_FAILED  # the trigger has the state's name
    if any(len(t.get("failed_by") or []) >= 2 for t in tasks):
        return "HYPOTHESIS_EXHAUSTED"
    return "UNKNOWN"
