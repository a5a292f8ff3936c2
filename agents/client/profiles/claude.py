"""Claude Code (`claude -p`): MCP through `--mcp-config`, permissions through
`--allowedTools`/`--disallowedTools`, output as `stream-json` (one JSON event per line, the
last a `result` carrying usage and cost: what agents.client.usage parses under "claude")."""

from __future__ import annotations

import json

from agents.client.profiles.base import (
    CODER,
    PLANNER,
    REVIEWER,
    FlagTable,
    Invocation,
    Profile,
    Session,
)

FLAGS = FlagTable(
    cli="claude",
    version="2.1",
    source="https://docs.anthropic.com/en/docs/claude-code/cli-reference",
    # -p: print mode, answer the prompt, then exit; --output-format: text | json | stream-json
    # (print mode), --verbose required with stream-json; --mcp-config: a JSON file (or string) of
    # MCP servers, --strict-mcp-config only those; --allowedTools: allowed without asking,
    # --disallowedTools: refused; --permission-mode: default | acceptEdits | plan |
    # bypassPermissions
    values="--output-format --input-format --mcp-config --allowedTools --disallowedTools"
    " --permission-mode --append-system-prompt --max-turns --model --add-dir",
    switches="-p --print --verbose --strict-mcp-config --version -v",
)

READ = ("Read", "Grep", "Glob", "LS")
EDIT = ("Edit", "MultiEdit", "Write", "NotebookEdit")


class Claude(Profile):
    name = "claude"
    binary = "claude"
    title = "Claude Code, `claude -p` (MCP)"
    flags = FLAGS
    tool_prefix = "mcp__liza__"

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
