"""`--agent custom -- CMD…`: any command, run as given (today's `liza supervise -- CMD`). It reads
the prompt from LIZA_PROMPT_FILE and reaches the board however it likes (`liza`, `liza mcp`)."""

from __future__ import annotations

from agents.client.profiles.base import CUSTOM, FlagTable, Invocation, Profile, Session


class Custom(Profile):
    name = "custom"
    binary = ""
    channel = CUSTOM
    title = "any command after `--` (reads LIZA_PROMPT_FILE; `liza` or `liza mcp`)"
    flags = FlagTable(cli="custom", version="-", source='README "Supervisor"')

    def __init__(self, command: list[str] | None = None) -> None:
        self.command = list(command or [])

    def build(self, session: Session) -> Invocation:
        return Invocation(list(self.command))  # not checked: the user's own command

    def invocation(self, session: Session) -> Invocation:
        return Invocation(list(self.command))


PROFILE = Custom()
