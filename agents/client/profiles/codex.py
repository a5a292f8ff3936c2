"""OpenAI Codex CLI (`codex exec`): no MCP config file flag, so the `liza` server is given as
`-c mcp_servers.liza.*` overrides (TOML values) with its tools pre-approved (a headless exec
cannot answer an approval prompt: the call would be cancelled); permissions are the sandbox
(`read-only` / `workspace-write`) and, for the planner, the shell tool switched off. Output:
`--json`, one JSONL event per line (`turn.completed` carries the usage)."""

from __future__ import annotations

import json

from agents.client.profiles.base import CODER, PLANNER, FlagTable, Invocation, Profile, Session

FLAGS = FlagTable(
    cli="codex",
    version="0.130",
    source="https://github.com/openai/codex/blob/main/docs/exec.md "
    "(and docs/config.md: mcp_servers, default_tools_approval_mode, features.shell_tool)",
    subcommand=("exec",),
    # --json: JSONL events on stdout; -s: read-only | workspace-write | danger-full-access;
    # -c: a config override key=value (value in TOML); -C: working directory; -o: write the last
    # message to a file
    values="-s --sandbox -c --config -C --cd -m --model -o --output-last-message --color",
    switches="--json --skip-git-repo-check --full-auto --version",
)


def _toml(value: object) -> str:
    """A TOML value for `-c` (JSON strings and arrays of strings are valid TOML)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


class Codex(Profile):
    name = "codex"
    binary = "codex"
    title = "OpenAI Codex CLI, `codex exec` (MCP)"
    flags = FLAGS
    tool_prefix = "liza."

    def invocation(self, session: Session) -> Invocation:
        command, args, env = session.mcp_server()
        sandbox = "workspace-write" if session.role == CODER else "read-only"
        overrides = {
            "approval_policy": "never",
            "mcp_servers.liza.command": command,
            "mcp_servers.liza.args": args,
            "mcp_servers.liza.env": env,
            "mcp_servers.liza.default_tools_approval_mode": "approve",
        }
        if session.role == PLANNER:
            overrides["features.shell_tool"] = False
            overrides["features.unified_exec"] = False
        argv = [self.binary, "exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox]
        for key, value in overrides.items():
            argv += ["-c", f"{key}={_toml(value)}"]
        return Invocation([*argv, session.prompt])


PROFILE = Codex()
