"""opencode (`opencode run`): its configuration (the `liza` MCP server as a local command, the
`permission` rules per role) in a file named by `OPENCODE_CONFIG`, merged over the user's;
output `--format json` (JSONL events; `step_finish` parts carry tokens and cost)."""

from __future__ import annotations

import json

from agents.client.profiles.base import (
    CODER,
    REVIEWER,
    Flag,
    FlagTable,
    Invocation,
    Profile,
    Session,
)

FLAGS = FlagTable(
    cli="opencode",
    version="1.1",
    source="https://opencode.ai/docs/cli/ (run), https://opencode.ai/docs/config/ "
    "(OPENCODE_CONFIG), https://opencode.ai/docs/mcp-servers/, https://opencode.ai/docs/permissions/",
    subcommand=("run",),
    flags=(
        Flag("--format", True, "default | json"),
        Flag("-m", True),
        Flag("--model", True),
        Flag("--agent", True),
        Flag("-c", False),
        Flag("--continue", False),
        Flag("-s", True),
        Flag("--session", True),
        Flag("--file", True),
        Flag("-f", True),
        Flag("--version", False),
    ),
)


class OpenCode(Profile):
    name = "opencode"
    binary = "opencode"
    title = "opencode, `opencode run` (MCP)"
    flags = FLAGS

    def tool_name(self, operation: str) -> str:
        return f"liza_{operation}"

    def permission(self, role: str) -> dict[str, object]:
        """opencode's `permission` rules for `role` (last match wins)."""
        if role == CODER:
            return {"edit": "allow", "bash": "allow", "webfetch": "deny"}
        if role == REVIEWER:
            shell = {"*": "deny", **{f"{c}*": "allow" for c in self.permissions(role).shell_read}}
            return {"edit": "deny", "bash": shell, "webfetch": "deny"}
        return {"edit": "deny", "bash": "deny", "webfetch": "deny"}

    def invocation(self, session: Session) -> Invocation:
        command, args, env = session.mcp_server()
        config = {
            "$schema": "https://opencode.ai/config.json",
            "mcp": {
                "liza": {
                    "type": "local",
                    "command": [command, *args],
                    "environment": env,
                    "enabled": True,
                }
            },
            "permission": self.permission(session.role),
        }
        path = session.state / "opencode.json"
        return Invocation(
            [self.binary, "run", "--format", "json", session.prompt],
            env={"OPENCODE_CONFIG": str(path)},
            files={path: json.dumps(config, indent=2)},
        )


PROFILE = OpenCode()
