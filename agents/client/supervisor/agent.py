"""One spawn of the agent's coding CLI: its environment and command line, its output read
while it runs, the heartbeat beside it and its termination; a part of `Supervisor` (loop.py)."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agents.client.errors import EXIT, LizaError
from agents.client.liverun import LiveRun, progress_file
from agents.client.profiles import Invocation, Profile, Session
from agents.client.supervisor.options import Assignment
from agents.client.supervisor.prompt import build_prompt

OUTPUT_LINES = 200
REPLY_LINES = 5000  # what a profile's after_exit reads of the agent's output


class AgentMixin:
    # -- one spawn -----------------------------------------------------------------------------

    def environment(self, a: Assignment, prompt: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "LIZA_KEY"}
        env.update(
            LIZA_URL=self.o.url,
            LIZA_PROJECT=self.o.project,
            LIZA_KEY_FILE=self.key_file,
            LIZA_ROLE=self.role,
            LIZA_AGENT_ID=self.agent["agent_id"],
            # Its session: the agent's `liza` and `liza mcp` send it, so a process of this
            # session left running after the id registered again is refused, exit 8.
            LIZA_GENERATION=str(self.client.generation or ""),
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
                # 42: the work was taken or the project stops; 8: the agent left (its own
                # `liza leave`, another's) and the session it heartbeats for is over. Either
                # way the spawn ends, and with it the heartbeats: they would not be heard.
                if error.exit in (EXIT["stop"], EXIT["not_registered"]):
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
