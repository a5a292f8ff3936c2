"""Gemini CLI (`gemini -p`): its settings (the `liza` MCP server, trusted; the built-in tools
allowed and excluded per role) in a system settings file named by
`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, the layer that overrides the user's and the project's;
`--approval-mode yolo` since a headless run cannot confirm (the exclusions still hold). Output:
`--output-format stream-json` (JSONL; the `result` event carries the token usage)."""

from __future__ import annotations

import json

from agents.client.profiles.base import CODER, REVIEWER, FlagTable, Invocation, Profile, Session

FLAGS = FlagTable(
    cli="gemini",
    version="0.40",
    source="https://geminicli.com/docs/cli/headless/ and "
    "https://geminicli.com/docs/get-started/configuration/ (mcpServers, tools.core, tools.exclude)",
    # -p: the prompt, non-interactive (headless) mode; --output-format: text | json | stream-json;
    # --approval-mode: default | auto_edit | yolo
    values="-p --prompt --output-format --approval-mode --allowed-mcp-server-names"
    " --allowed-tools -m --model --include-directories",
    switches="-y --yolo -s --sandbox --version -v",
)

READ = ["read_file", "read_many_files", "list_directory", "glob", "search_file_content"]
EDIT = ["write_file", "replace"]
SHELL = "run_shell_command"


class Gemini(Profile):
    name = "gemini"
    binary = "gemini"
    title = "Gemini CLI, `gemini -p` (MCP)"
    flags = FLAGS

    def tools(self, role: str) -> tuple[list[str], list[str]]:
        """(tools.core, tools.exclude) for `role`."""
        if role == CODER:
            return [*READ, *EDIT, SHELL], []
        if role == REVIEWER:
            shell = [f"{SHELL}({c})" for c in self.permissions(role).shell_read]
            return [*READ, *shell], [*EDIT]
        return list(READ), [*EDIT, SHELL]

    def invocation(self, session: Session) -> Invocation:
        command, args, env = session.mcp_server()
        core, exclude = self.tools(session.role)
        settings = {
            "mcpServers": {"liza": {"command": command, "args": args, "env": env, "trust": True}},
            "tools": {"core": core, "exclude": exclude},
        }
        path = session.state / "gemini-settings.json"
        argv = [
            self.binary, "-p", session.prompt, "--output-format", "stream-json",
            "--approval-mode", "yolo", "--allowed-mcp-server-names", "liza",
        ]  # fmt: skip
        return Invocation(
            argv,
            env={"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(path)},
            files={path: json.dumps(settings, indent=2)},
        )


PROFILE = Gemini()
