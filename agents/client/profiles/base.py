"""What every agent profile is made of (`agents.client.profiles`).

A profile turns one spawn of `liza supervise` (a `Session`: the role, the prompt, the LIZA_*
environment, the agent's state directory) into an `Invocation` of its coding CLI: the exact
command line, the extra environment, and the configuration files that CLI reads (its MCP server
entry for `liza mcp`, its permission settings), written 0600 into the agent's state directory —
never into the worktree, whose `git status` must stay clean.

Every flag a profile passes is declared in its `FlagTable`, with the CLI version and the
documentation it was read from; `Profile.invocation` refuses to build a command line with a flag
the table does not hold, and the fakes in tests/agents/client/fakes/ refuse any flag the real CLI
does not document, so a profile cannot drift from its CLI unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.client.operations import ROLES, operations_for

PLANNER, CODER, REVIEWER = ROLES
MCP, REPLY, CUSTOM = "mcp", "reply", "custom"  # how a profile's agent reaches the board


@dataclass(frozen=True)
class Flag:
    name: str  # as typed: "--print", "-p", "--config"
    value: bool  # takes a value


@dataclass(frozen=True)
class FlagTable:
    """The documented flags of one CLI's non-interactive mode, written as its help lists them:
    `values` the options that take a value, `switches` those that do not (names split on
    white space)."""

    cli: str
    version: str  # the version the table was checked against
    source: str  # the documentation (URL) it was read from
    values: str = ""
    switches: str = ""
    subcommand: tuple[str, ...] = ()  # e.g. ("exec",) for codex, ("run",) for opencode

    @property
    def flags(self) -> tuple[Flag, ...]:
        return tuple(
            [Flag(name, True) for name in self.values.split()]
            + [Flag(name, False) for name in self.switches.split()]
        )

    def by_name(self) -> dict[str, Flag]:
        return {f.name: f for f in self.flags}

    def check(self, argv: list[str]) -> None:
        """Every option in `argv` (after the binary and subcommand) is a documented flag."""
        known = self.by_name()
        skip = False
        for arg in argv:
            if skip:
                skip = False
                continue
            if arg.startswith("-") and arg != "-":
                name = arg.split("=", 1)[0]
                if name not in known:
                    raise ValueError(f"{self.cli}: {name} is not in the flag table ({self.source})")
                skip = known[name].value and "=" not in arg


@dataclass
class Session:
    """One spawn, as a profile sees it."""

    role: str
    agent_id: str
    prompt: str
    prompt_file: Path
    state: Path  # the agent's state directory (.git/liza/<agent-id>): config files go here
    cwd: Path
    env: dict[str, str]  # the LIZA_* contract (README "Supervisor")
    liza: list[str] = field(default_factory=lambda: [sys.executable, "-m", "agents.client.cli"])

    def mcp_server(self) -> tuple[str, list[str], dict[str, str]]:
        """`liza mcp` as an MCP client starts it: command, arguments, environment."""
        names = ("LIZA_URL", "LIZA_PROJECT", "LIZA_KEY_FILE", "LIZA_REPO")
        names += ("LIZA_INTEGRATION_BRANCH", "LIZA_WORKTREE", "LIZA_TASK")
        env = {k: self.env[k] for k in names if self.env.get(k)}
        return self.liza[0], [*self.liza[1:], "mcp"], env


@dataclass
class Invocation:
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[Path, str] = field(default_factory=dict)  # written 0600 before the spawn

    def write_files(self) -> None:
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)


@dataclass(frozen=True)
class Permissions:
    """What an agent of a role may do, in words the docs and `--explain` print; each profile
    maps it onto its CLI's own permission flags or settings."""

    edit_files: bool
    shell: bool  # any shell command
    shell_read: tuple[str, ...] = ()  # the read-only/test commands allowed without `shell`


# The one least-privilege rule (issue 23): a planner plans through the board and reads the
# repository; a coder edits and runs anything in its worktree; a reviewer reads, runs git's read
# commands and the tests, and edits nothing.
REVIEW_COMMANDS = ("git diff", "git log", "git show", "git status", "pytest", "python -m pytest")
PERMISSIONS = {
    PLANNER: Permissions(edit_files=False, shell=False),
    CODER: Permissions(edit_files=True, shell=True),
    REVIEWER: Permissions(edit_files=False, shell=False, shell_read=REVIEW_COMMANDS),
}


class Profile:
    """One coding CLI. Subclasses set the class attributes and build `invocation`."""

    name: str = ""
    binary: str = ""
    channel: str = MCP
    flags: FlagTable
    title: str = ""  # one line for `liza agents`
    tool_prefix: str = ""  # how this CLI names the `liza` MCP server's tools: prefix + operation
    version_args: tuple[str, ...] = ("--version",)

    def invocation(self, session: Session) -> Invocation:
        raise NotImplementedError

    def build(self, session: Session) -> Invocation:
        """`invocation`, its flags checked against the table."""
        made = self.invocation(session)
        start = 1 + len(self.flags.subcommand)
        self.flags.check(made.command[start:])
        return made

    def permissions(self, role: str) -> Permissions:
        return PERMISSIONS[role]

    def tool_name(self, operation: str) -> str:
        """How this CLI shows the agent the `liza` MCP server's tool `operation`."""
        return f"{self.tool_prefix}{operation}"

    def operations(self, role: str) -> list[str]:
        return [op.name for op in operations_for(role)]

    def after_exit(self, session: Session, output: str, run: Callable[[list[str]], Any]) -> None:
        """A hook run when the agent exits, before the run is reported (the `reply` channel
        runs the `liza` commands of the agent's reply here)."""

    def installed(self) -> tuple[str | None, str | None]:
        """(path, version) of the CLI on this machine, or (None, None)."""
        path = shutil.which(self.binary) if self.binary else None
        if path is None:
            return None, None
        try:
            done = subprocess.run(
                [path, *self.version_args], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.TimeoutExpired):
            return path, None
        lines = (done.stdout or done.stderr).strip().splitlines()
        return path, lines[0].strip() if lines else None
