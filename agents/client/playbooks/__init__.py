"""Role playbooks: what a planner, a coder and a code reviewer do, shipped as package data
(`<role>.md` here) and overridable per project by `.liza/prompts/<role>.md` in the repository.

One source per role, rendered per profile: `{{op NAME}}` names an operation of
agents.client.operations, and is written the way that profile's agent reaches the board — the
MCP tool name its CLI shows (`mcp__liza__submit` for Claude Code), or the `liza` command with
its arguments (aider's reply block, a custom command's shell). An operation the role is not
offered is refused when rendering, so a prompt cannot ask for what the permissions forbid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from agents.client.errors import UsageError
from agents.client.operations import BY_NAME, operations_for
from agents.client.profiles.base import MCP, REPLY, Profile

OP = re.compile(r"\{\{op ([a-z_]+)\}\}")
OVERRIDE = Path(".liza") / "prompts"

CHANNEL = {
    MCP: (
        "How you reach the board: the tools of the `liza` MCP server (already configured; "
        "its instructions list them). A refusal comes back as a tool error that says why."
    ),
    REPLY: (
        "How you reach the board: you cannot run commands. End your reply with a block\n"
        "```liza\nliza <command> ...\n```\none `liza` command per line; they run, in order, "
        "when you exit. `--commit HEAD` means your last commit."
    ),
}
CUSTOM_CHANNEL = (
    "How you reach the board: the `liza` command (LIZA_URL, LIZA_PROJECT and LIZA_KEY_FILE are "
    "set; `liza --help` lists its exit codes), or `liza mcp` as an MCP server."
)
ENDING = (
    "Ending: when your part is done, end the session (any exit code): the supervisor asks the "
    "board what comes next and starts you again when there is work. Exiting 42 is never needed."
)


def source(role: str, repo: Path | None) -> tuple[str, str]:
    """(text, where it came from): the project's override, else the shipped playbook."""
    if repo is not None:
        override = repo / OVERRIDE / f"{role}.md"
        if override.is_file():
            return override.read_text(), str(override)
    shipped = resources.files(__package__) / f"{role}.md"
    return shipped.read_text(), f"agents/client/playbooks/{role}.md"


# How a command-line agent is told to run an operation: `liza <subcommand> ARGS --option VALUE …`,
# read from the command line's own parser (agents.client.cli.usage) and handed in by whoever
# renders — the supervisor has it from `liza supervise` — so that the playbooks, which the
# command line's `supervise` uses, do not import the command line back.
Usage = Callable[[str], str]


def reference(profile: Profile, role: str, name: str, usage: Usage | None) -> str:
    if name not in BY_NAME:
        raise UsageError(f"the playbook names {name!r}, which is no operation")
    if name not in {op.name for op in operations_for(role)}:
        raise UsageError(f"the playbook names {name!r}, which a {role} is not offered")
    if profile.channel == MCP:
        return f"`{profile.tool_name(name)}`"
    if usage is None:
        raise UsageError(f"a {profile.channel} agent's playbook needs the `liza` usage of {name}")
    return f"`{usage(name)}`"


def render(
    role: str, profile: Profile, repo: Path | None = None, usage: Usage | None = None
) -> str:
    """The role's playbook for `profile`'s agent: how it reaches the board, the playbook with
    each operation named in that form, and how a session ends."""
    text, _ = source(role, repo)
    body = OP.sub(lambda m: reference(profile, role, m.group(1), usage), text)
    return "\n\n".join([CHANNEL.get(profile.channel, CUSTOM_CHANNEL), body.strip(), ENDING])


def referenced(role: str, repo: Path | None = None) -> set[str]:
    """The operations the role's playbook names."""
    return set(OP.findall(source(role, repo)[0]))
