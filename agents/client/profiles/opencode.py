"""opencode (`opencode run`): its configuration (the `liza` MCP server as a local command, the
`permission` rules per role) in a file named by `OPENCODE_CONFIG`, merged over the user's;
output `--format json` (JSONL events; `step_finish` parts carry tokens and cost)."""

from __future__ import annotations

import json

from agents.client.profiles.base import CODER, REVIEWER, FlagTable, Invocation, Profile, Session

FLAGS = FlagTable(
    cli="opencode",
    version="1.1",
    source="https://opencode.ai/docs/cli/ (run), https://opencode.ai/docs/config/ "
    "(OPENCODE_CONFIG), https://opencode.ai/docs/mcp-servers/, https://opencode.ai/docs/permissions/",
    subcommand=("run",),
    values="--format -m --model --agent -s --session --file -f",  # --format: default | json
    switches="-c --continue --version",
)


class OpenCode(Profile):
    name = "opencode"
    binary = "opencode"
    title = "opencode, `opencode run` (MCP)"
    flags = FLAGS
    tool_prefix = "liza_"

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
