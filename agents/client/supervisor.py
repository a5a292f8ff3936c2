"""`liza supervise`: seed 000's supervisor for one agent, over the HTTP API (issue 12 §2).

It owns what an agent may not do itself: it registers the key's agent, waits for work without
spawning (polling `/work`, honouring Retry-After, waiting out a pause or a checkpoint, stopping
on an abort), claims **before** spawning (coders through claim-next with `base_commit`
computed first, reviewers through review claim-next), prepares the task's git worktree, writes
the prompt, spawns the agent command with the `LIZA_*` environment, heartbeats in the
background, and decides what the end of a session means without a wrapper (issue 23): 42
restarts after 2 s; any other exit asks `/work`: the role complete, it stops; else the next
session comes when there is work, unless the session crashed — a non-zero exit with no protocol
progress (restarted after 5 s; 3 crashes in 5 min stop it). It merges what its reviewer
approved, and reports each spawn to the server as a run.

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
import shlex
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

from agents.client import gitops, playbooks, wire
from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client
from agents.client.liverun import LiveRun, progress_file, quota_pause
from agents.client.profiles import Invocation, Profile, Session
from agents.client.profiles.custom import Custom
from agents.client.wakeup import Wakeup

# The supervisor's own exit codes, beyond the protocol's table (agents.client.errors.EXIT).
STOPPED = 0  # role complete, sprint or goal aborted, or a signal handled cleanly
CRASH_LOOP = 12  # the agent crashed `crash_limit` times within `crash_window` seconds
OWN_ERRORS = 13  # the supervisor itself failed `crash_limit` times within `crash_window`

ROLE_ALIASES = {"code-reviewer": "code_reviewer", "reviewer": "code_reviewer"}
OUTPUT_LINES = 200
REPLY_LINES = 5000  # what a profile's after_exit reads of the agent's output
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
    explain: bool = False  # print the command, environment and prompt it would run; stop
    profile: Profile | None = None  # None: `custom`, running `command`
    timing: Timing = field(default_factory=Timing)

    @property
    def agent_profile(self) -> Profile:
        return self.profile if self.profile is not None else Custom(self.command)


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
        if self.o.explain:
            return self.explain()
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
        code, lost, run = self.spawn(assignment, reason)
        if self.o.remote and self.role == "coder" and assignment.key:
            self.push(assignment.key)  # whatever the exit code: the work must not be lost
        if self.stopping is not None:
            return self._stopped(assignment)
        if lost:
            self.say(f"{lost}: the agent was stopped; restarting")
            self.sleep(self.t.restart)
            return lost
        if code == EXIT["stop"]:
            self.sleep(self.t.restart)
            return "exit_42"
        return self.session_ended(code, run)

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

    def spawn(self, a: Assignment, reason: str) -> tuple[int, str | None, dict[str, Any] | None]:
        """Run the agent command once: its exit code, why it was stopped (or None) and the
        server's record of the run (None when it could not be reported)."""
        self.spawns += 1
        if a.key:
            self.held.add(a.key)
        prompt = self.state / f"prompt-{self.spawns}.md"
        prompt.write_text(build_prompt(self, a))
        cwd = a.worktree if self.role == "coder" and a.worktree else self.repo
        session, invocation, env = self.invocation(a, prompt, Path(cwd))
        self.command = invocation.command
        run = self._run_start(a, reason)
        tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)
        reply: collections.deque[str] = collections.deque(maxlen=REPLY_LINES)
        self.say(f"spawning {self.shown(invocation.command)} ({reason})")
        self.last = a
        try:
            invocation.write_files()
            self.child = subprocess.Popen(
                invocation.command,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: signals reach its children
            )
        except OSError as error:
            # A command that cannot start is a crash like any other (the shell's 127).
            tail.append(f"liza supervise: cannot run {invocation.command[0]}: {error}")
            return 127, None, self._run_finish(run, 127, tail, None)
        if self.stopping is not None:
            # The signal came while it was starting (the handler saw no child to forward to).
            self.terminate_child(signal.Signals(self.stopping))
        lost: list[str] = []

        def stop(why: str) -> None:
            lost.append(why)
            self.terminate_child()

        worktree = a.worktree if self.role == "coder" else None
        self.live = LiveRun(self, run, worktree=worktree, on_stop=stop)
        reader = threading.Thread(target=self._pump, args=(self.child, tail, reply), daemon=True)
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
        if stopped is None and self.stopping is not None:
            # Its own Ctrl-C/SIGTERM, forwarded: a stop the supervisor caused, never a crash
            # (crashes count towards the agent's "in error", seed 003).
            stopped = f"signal {signal.Signals(self.stopping).name}"
        self.session_output(self.o.agent_profile, list(reply))
        if stopped is None:
            # The profile's last word (aider: the `liza` commands of its reply), before the run
            # ends: what it does is the session's progress.
            self.o.agent_profile.after_exit(
                session, "\n".join(reply), lambda args: self._liza(args, env, Path(cwd), tail)
            )
        return code, stopped, self._run_finish(run, code, tail, stopped)

    def session_output(self, profile: Profile, lines: list[str]) -> None:
        """Hook: the agent's output once it exited, in its profile's format (Claude Code's
        stream-json, Codex's JSONL events, aider's text …). Usage and provider quota messages
        are read line by line while it runs (`agents.client.liverun`)."""

    def invocation(
        self, a: Assignment, prompt: Path, cwd: Path
    ) -> tuple[Session, Invocation, dict[str, str]]:
        """The profile's command line for this spawn, and the environment it runs in."""
        env = self.environment(a, prompt)
        session = Session(
            role=self.role,
            agent_id=self.agent["agent_id"],
            prompt=prompt.read_text(),
            prompt_file=prompt,
            state=self.state,
            cwd=cwd,
            env={k: v for k, v in env.items() if k.startswith("LIZA_")},
        )
        invocation = self.o.agent_profile.build(session)
        return session, invocation, {**env, **invocation.env}

    def shown(self, command: list[str]) -> str:
        """The command as said in the log: the prompt argument (long) shortened."""
        return " ".join(
            (arg[:40] + "…") if len(arg) > 60 or "\n" in arg else arg for arg in command
        )

    def _liza(
        self, args: list[str], env: dict[str, str], cwd: Path, tail: collections.deque[str]
    ) -> int:
        """One `liza` command on the agent's behalf (its profile's reply channel)."""
        if args and args[0] == "#refused":
            line = f"liza supervise: refused: {args[1]}"
            self.say(line.removeprefix("liza supervise: "))
            tail.append(line)
            return EXIT["usage"]
        done = subprocess.run(
            [sys.executable, "-m", "agents.client.cli", *args],
            cwd=cwd, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        out = (done.stdout + done.stderr).strip()
        line = f"liza {' '.join(args)} -> exit {done.returncode}" + (f": {out}" if out else "")
        self.say(line)
        tail.append(line)
        return done.returncode

    def _pump(
        self,
        child: subprocess.Popen[bytes],
        tail: collections.deque[str],
        reply: collections.deque[str],
    ) -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.decode(errors="replace")
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line.rstrip("\n"))
            reply.append(line.rstrip("\n"))
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
                if live is not None:
                    live.report_usage()  # first: the heartbeat's answer weighs it (budgets)
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
        self.say(f"would spawn: {' '.join(self.o.command) or self.o.agent_profile.name}")
        return STOPPED

    def explain(self) -> int:
        """`--explain`: the exact command, environment (secrets redacted) and prompt the next
        spawn would run, for a stand-in task; registers, claims and spawns nothing."""
        body = self.client.work().body
        self.agent = {"agent_id": body.get("agent") or "?", "role": body.get("role")}
        self.config = self.client.get("config")
        self.integration = self.config.get("integration_branch") or "integration"
        self.state = gitops.state_dir(self.repo, self.agent["agent_id"])
        self.key_file = (
            str(Path(self.o.key_file).resolve()) if self.o.key_file else str(self.state / "key")
        )
        task = None
        if self.role in ("coder", "code_reviewer"):
            task = {
                "key": "<task>", "iteration": 1, "description": "<the task's description>",
                "done_when": "<its done_when>", "base_commit": "<base>",
                "review_commit": "<review commit>", "assigned_to": "<coder>",
            }  # fmt: skip
        a = Assignment(
            task=task, worktree=gitops.worktree_path(self.repo, "<task>") if task else None
        )
        prompt = self.state / "prompt-explain.md"
        prompt.parent.mkdir(parents=True, exist_ok=True)
        prompt.write_text(build_prompt(self, a))
        cwd = a.worktree if self.role == "coder" and a.worktree else self.repo
        session, invocation, env = self.invocation(a, prompt, Path(cwd))
        print(f"profile: {self.o.agent_profile.name} ({self.o.agent_profile.channel})")
        print("command:")
        print("  " + self.redact(" ".join(shlex.quote(arg) for arg in invocation.command)))
        print(f"cwd: {cwd}")
        print("environment (LIZA_* and the profile's; the key only as a file):")
        for name in sorted(k for k in env if k.startswith("LIZA_") or k in invocation.env):
            value = env[name]
            if (
                any(w in name for w in ("KEY", "SECRET", "TOKEN", "PASSWORD"))
                and name != "LIZA_KEY_FILE"
            ):
                value = "[redacted]"
            print(f"  {name}={self.redact(value)}")
        for path, text in invocation.files.items():
            print(f"file {path} (0600):")
            print("  " + self.redact(text).replace("\n", "\n  "))
        print("prompt:")
        print(self.redact(session.prompt))
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
        "Rules: never claim, merge or create worktrees: the supervisor does. When the board "
        "says stop (lease lost, paused, checkpoint, aborted), end the session. Work silently.",
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
        sections.append("")
    sections += [
        "=== PLAYBOOK ===",
        playbooks.render(agent["role"], s.o.agent_profile, s.repo),
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
