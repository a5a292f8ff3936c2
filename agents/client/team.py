"""`liza demo-team`: a planner, two coders and two reviewers, each the scripted agent program of
its role under its own `liza supervise`, against a running server (issue 12 §4).

The keys come from a directory of `<agent-id>.key` files (what `manage.py liza_demo --team DIR`
writes, with the project's slug in DIR/project): the agent id names the role, so the directory
alone says who the team is. The git repository is a throwaway one with an `integration`
branch unless `--repo` names one. Every member starts at once: a coder or reviewer that asks
before the planner has written a task waits on the open goal (the server's
`selectors.tasks.work_may_still_come`). It ends when the goal is COMPLETED (exit 0), when
`--timeout` passes or every supervisor has stopped first (exit 1), or on SIGINT/SIGTERM (each
supervisor is asked to hand off and stop; exit 130/143).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.client import wire
from agents.client.errors import LizaError, UsageError
from agents.client.http import Client
from agents.client.wakeup import Wakeup

PROGRAM = {"planner": "planner", "coder": "coder", "code-reviewer": "code_reviewer"}
ORDER = ("planner", "coder", "code-reviewer")  # the order they are listed and started in
STOP_GRACE = 30.0  # seconds the supervisors have to stop by themselves once the goal is done


def role_of(agent_id: str) -> str:
    prefix = agent_id.rsplit("-", 1)[0]
    if prefix not in PROGRAM:
        raise UsageError(
            f"{agent_id}: a key file must be named planner-N, coder-N or code-reviewer-N"
        )
    return prefix


def agent_command(agent_id: str) -> list[str]:
    """The scripted agent of `agent_id`'s role, run by this interpreter (no LLM)."""
    return [sys.executable, "-m", f"agents.client.demo_agents.{PROGRAM[role_of(agent_id)]}"]


def key_files(directory: Path) -> dict[str, Path]:
    """agent id -> key file, the planner first; refused without a planner, a coder and a
    reviewer."""
    files = {path.stem: path for path in directory.glob("*.key")}
    found = sorted(files, key=lambda a: (ORDER.index(role_of(a)), a))
    missing = [role for role in ORDER if not any(role_of(a) == role for a in found)]
    if missing:
        raise UsageError(f"{directory}: no key file for a {', '.join(missing)} (<agent-id>.key)")
    return {agent_id: files[agent_id] for agent_id in found}


def throwaway_repo() -> Path:
    """A new repository whose `integration` branch has one commit (checked out)."""
    root = Path(tempfile.mkdtemp(prefix="liza-demo-team-"))

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)

    git("init", "-q", "-b", "integration")
    (root / "README.md").write_text("# The demo team's repository\n")
    git("add", "README.md")
    git("-c", "user.name=liza", "-c", "user.email=liza@localhost", "commit", "-q", "-m", "init")
    return root


@dataclass
class Member:
    agent_id: str
    process: subprocess.Popen[str]


class Team:
    def __init__(
        self,
        *,
        url: str,
        project: str,
        keys: dict[str, Path],
        repo: Path,
        supervise_args: Sequence[str] = (),
        echo: Callable[[str], None] = lambda line: print(line, flush=True),
    ) -> None:
        self.url, self.project, self.keys, self.repo = url, project, keys, repo
        self.supervise_args = list(supervise_args)
        self.echo = echo
        self.members: list[Member] = []
        self.stopping: int | None = None
        self._wake = Wakeup()  # set by the signal handler: no lock (agents.client.wakeup)

    def start(self, agent_ids: Sequence[str]) -> None:
        for agent_id in agent_ids:
            key_file = self.keys[agent_id]
            command = [
                sys.executable, "-m", "agents.client.cli",
                "--url", self.url, "--project", self.project, "--key-file", str(key_file),
                "supervise", "--id", agent_id, "--repo", str(self.repo), *self.supervise_args,
                "--", *agent_command(agent_id),
            ]  # fmt: skip
            env = {k: v for k, v in os.environ.items() if k != "LIZA_KEY"}
            process = subprocess.Popen(
                command,
                cwd=self.repo,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            self.members.append(Member(agent_id, process))
            threading.Thread(target=self._pump, args=(agent_id, process), daemon=True).start()
            self.echo(
                f"liza demo-team: started {agent_id} (pid {process.pid}): liza supervise -- "
                + " ".join(agent_command(agent_id)[1:])
            )

    def _pump(self, agent_id: str, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.echo(f"{agent_id:>16} | {line.rstrip()}")

    def goal_status(self, client: Client) -> str | None:
        try:
            return client.goal().get("status")
        except LizaError:
            return None  # no goal, or the server away a moment: asked again

    def wait(self, timeout: float, poll: float) -> int:
        """Every member at once; then 0 once the goal is COMPLETED, 1 on the timeout or if
        every supervisor stopped first."""
        planner = next(iter(self.keys))
        deadline = time.monotonic() + timeout
        key = self.keys[planner].read_text().strip()
        with Client(self.url, self.project, key, retries=0) as client:
            self.start(list(self.keys))
            while self.stopping is None:
                if self.goal_status(client) == wire.GOAL_COMPLETED:
                    self.echo("liza demo-team: the goal is COMPLETED")
                    return 0
                if all(m.process.poll() is not None for m in self.members):
                    self.echo("liza demo-team: every supervisor stopped before the goal completed")
                    return 1
                if time.monotonic() > deadline:
                    self.echo(f"liza demo-team: the goal is not complete after {timeout:g} s")
                    return 1
                self._wake.wait(poll)
        return 128 + self.stopping

    def stop(self, grace: float) -> None:
        """Each supervisor stops by itself within `grace` (role complete), else it gets SIGTERM
        (it forwards it to its agent and hands off); SIGKILL as the last resort."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(m.process.poll() is None for m in self.members):
            time.sleep(0.2)
        for member in self.members:
            if member.process.poll() is None:
                member.process.send_signal(signal.SIGTERM)
        for member in self.members:
            try:
                member.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                member.process.kill()
                member.process.wait()
            self.echo(
                f"liza demo-team: {member.agent_id} stopped (exit {member.process.returncode})"
            )

    def install_signals(self) -> None:
        def handler(signum: int, frame: object) -> None:
            self.stopping = signum
            self._wake.set()

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)


def run_team(
    *,
    url: str,
    project: str,
    keys_dir: Path,
    repo: Path | None,
    timeout: float,
    supervise_args: Sequence[str],
) -> int:
    # Absolute: every supervisor runs in the team's repository, not where this was started.
    keys = key_files(keys_dir.resolve())
    if repo is None:
        repo = throwaway_repo()
    team = Team(url=url, project=project, keys=keys, repo=repo, supervise_args=supervise_args)
    print(f"liza demo-team: project {project} at {url}, repository {repo}", flush=True)
    team.install_signals()
    started = time.monotonic()
    code = 1
    try:
        code = team.wait(timeout, poll=0.5)
    finally:
        with contextlib.suppress(Exception):
            team.stop(STOP_GRACE if code == 0 else 0.0)
    print(f"liza demo-team: done in {time.monotonic() - started:.1f} s (exit {code})", flush=True)
    return code
