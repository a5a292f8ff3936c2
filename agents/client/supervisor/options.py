"""What `liza supervise` is told (its options and delays), what one spawn works on, and the
supervisor's own exit codes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.client.profiles import Profile
from agents.client.profiles.custom import Custom

# The supervisor's own exit codes, beyond the protocol's table (agents.client.errors.EXIT).
STOPPED = 0  # role complete, sprint or goal aborted, or a signal handled cleanly
CRASH_LOOP = 12  # the agent crashed `crash_limit` times within `crash_window` seconds
OWN_ERRORS = 13  # the supervisor itself failed `crash_limit` times within `crash_window`

ROLE_ALIASES = {"code-reviewer": "code_reviewer", "reviewer": "code_reviewer"}


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
