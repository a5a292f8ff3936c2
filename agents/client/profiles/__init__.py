"""Agent profiles: one per coding CLI (issue 23), so `liza supervise --agent claude --role coder`
runs a real agent with no hand-written command, no wrapper and no permission list of its own.

Each profile (a module here) knows its CLI's non-interactive invocation with the prompt, how the
agent reaches the board (`liza mcp` configured the way that CLI reads its MCP servers, or — for
aider, which runs no shell command the model suggests — the `liza` commands of its reply), the
least-privilege permissions of each role (base.PERMISSIONS: a reviewer edits nothing, a planner
runs no shell) in that CLI's own flags or settings, and the flag table it was checked against.
Usage and quota lines in each CLI's output are parsed by agents.client.usage, keyed by profile
name (`Profile.name`).
"""

from __future__ import annotations

from agents.client.errors import UsageError
from agents.client.profiles import aider, claude, codex, custom, gemini, opencode
from agents.client.profiles.base import Invocation, Profile, Session

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        claude.PROFILE,
        codex.PROFILE,
        gemini.PROFILE,
        aider.PROFILE,
        opencode.PROFILE,
        custom.PROFILE,
    )
}

__all__ = ["PROFILES", "Invocation", "Profile", "Session", "profile"]


def profile(name: str, command: list[str] | None = None) -> Profile:
    """The profile `name`; `custom` runs `command`, the others refuse one."""
    if name not in PROFILES:
        raise UsageError(f"no agent profile {name!r}; one of {', '.join(PROFILES)}")
    if name == "custom":
        if not command:
            raise UsageError("--agent custom runs the command after `--`: -- CMD ...")
        return custom.Custom(command)
    if command:
        raise UsageError(
            f"--agent {name} builds its own command; give a command only with --agent custom"
        )
    return PROFILES[name]
