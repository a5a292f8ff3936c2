"""Claude Code (`claude -p`): MCP through `--mcp-config`, permissions through
`--allowedTools`/`--disallowedTools`, output as `stream-json` (one JSON event per line, the
last a `result` carrying usage and cost: what agents.client.usage parses under "claude")."""

from __future__ import annotations

import json

from agents.client.profiles.base import (
    CODER,
    PLANNER,
    REVIEWER,
    Flag,
    FlagTable,
    Invocation,
    Profile,
    Session,
)

FLAGS = FlagTable(
    cli="claude",
    version="2.1",
    source="https://docs.anthropic.com/en/docs/claude-code/cli-reference",
    flags=(
        Flag("-p", False, "print mode: answer the prompt, then exit"),
        Flag("--print", False),
        Flag("--output-format", True, "text | json | stream-json (print mode)"),
        Flag("--input-format", True),
        Flag("--verbose", False, "required with stream-json in print mode"),
        Flag("--mcp-config", True, "a JSON file (or string) of MCP servers"),
        Flag("--strict-mcp-config", False, "only the servers of --mcp-config"),
        Flag("--allowedTools", True, "tools allowed without asking"),
        Flag("--disallowedTools", True, "tools refused"),
        Flag("--permission-mode", True, "default | acceptEdits | plan | bypassPermissions"),
        Flag("--append-system-prompt", True),
        Flag("--max-turns", True),
        Flag("--model", True),
        Flag("--add-dir", True),
        Flag("--version", False),
        Flag("-v", False),
    ),
)

READ = ("Read", "Grep", "Glob", "LS")
EDIT = ("Edit", "MultiEdit", "Write", "NotebookEdit")


class Claude(Profile):
    name = "claude"
    binary = "claude"
    title = "Claude Code, `claude -p` (MCP)"
    flags = FLAGS

    def tool_name(self, operation: str) -> str:
        return f"mcp__liza__{operation}"

    def tools(self, role: str) -> tuple[list[str], list[str]]:
        """(allowed, disallowed) for `role` (base.PERMISSIONS in Claude Code's words)."""
        allowed = ["mcp__liza", *READ]
        if role == CODER:
            return [*allowed, *EDIT, "Bash"], []
        if role == REVIEWER:
            shell = self.permissions(role).shell_read
            return [*allowed, *(f"Bash({c}:*)" for c in shell)], list(EDIT)
        assert role == PLANNER
        return allowed, [*EDIT, "Bash"]

    def invocation(self, session: Session) -> Invocation:
        command, args, env = session.mcp_server()
        config = session.state / "claude-mcp.json"
        allowed, disallowed = self.tools(session.role)
        argv = [
            self.binary, "-p", session.prompt,
            "--output-format", "stream-json", "--verbose",
            "--mcp-config", str(config), "--strict-mcp-config",
            "--allowedTools", ",".join(allowed),
        ]  # fmt: skip
        if disallowed:
            argv += ["--disallowedTools", ",".join(disallowed)]
        if session.role == CODER:
            argv += ["--permission-mode", "acceptEdits"]
        servers = {"mcpServers": {"liza": {"command": command, "args": args, "env": env}}}
        return Invocation(argv, files={config: json.dumps(servers, indent=2)})


PROFILE = Claude()
