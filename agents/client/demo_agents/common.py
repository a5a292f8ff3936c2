"""What every scripted agent shares: the supervisor's environment, the client, git, the exit."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agents.client.cli import read_key_file
from agents.client.errors import EXIT, LizaError
from agents.client.http import Client

DONE, RESTART, CRASH = 0, EXIT["stop"], 1


@dataclass(frozen=True)
class Env:
    """The supervisor's contract (`liza supervise` sets these before spawning)."""

    url: str
    project: str
    key: str
    role: str
    agent_id: str
    task: str  # the task the supervisor claimed (a coder's task, a reviewer's review), or ""
    worktree: Path
    repo: Path
    integration_branch: str
    base_commit: str
    prompt_file: str
    generation: int | None = None  # its supervisor's session (LIZA_GENERATION)

    @classmethod
    def read(cls) -> Env:
        e = os.environ
        key = e.get("LIZA_KEY") or read_key_file(e["LIZA_KEY_FILE"])
        cwd = Path.cwd()
        return cls(
            url=e["LIZA_URL"],
            project=e["LIZA_PROJECT"],
            key=key,
            role=e.get("LIZA_ROLE", ""),
            agent_id=e.get("LIZA_AGENT_ID", ""),
            task=e.get("LIZA_TASK", ""),
            worktree=Path(e.get("LIZA_WORKTREE") or cwd),
            repo=Path(e.get("LIZA_REPO") or cwd),
            integration_branch=e.get("LIZA_INTEGRATION_BRANCH") or "integration",
            base_commit=e.get("LIZA_BASE_COMMIT", ""),
            prompt_file=e.get("LIZA_PROMPT_FILE", ""),
            generation=int(e["LIZA_GENERATION"]) if e.get("LIZA_GENERATION") else None,
        )

    def client(self) -> Client:
        return Client(self.url, self.project, self.key, generation=self.generation)


def say(agent: str, message: str) -> None:
    """One line of the agent's output (the supervisor keeps the last ones as the run's log)."""
    print(f"[{agent}] {message}", flush=True)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


class GitError(RuntimeError):
    pass


def strict(key: str) -> bool:
    """The deterministic variation: about half the tasks get one rejection (CRC, not hash())."""
    return zlib.crc32(key.encode()) % 2 == 0


def finish(client: Client, agent: str) -> int:
    """This session's work is done: 0 if the role's is too (seed 000 exit 0), else 42."""
    body = client.work().body
    if body.get("exit") == 0:
        say(agent, "role complete")
        return DONE
    say(agent, f"session done; the role is not ({body.get('reason') or 'more may come'})")
    return RESTART


def run(main: Callable[[Env, Client], int]) -> None:
    """Run an agent's `main`, turning refusals and git failures into the protocol's exits."""
    env = Env.read()
    agent = env.agent_id or env.role or "agent"
    try:
        with env.client() as client:
            code = main(env, client)
    except LizaError as error:
        say(agent, f"{error.code}: {error.message} (exit {error.exit})")
        code = RESTART if error.exit == RESTART else (error.exit or CRASH)
    except GitError as error:
        say(agent, f"git failed: {error}")
        code = CRASH
    sys.exit(code)
