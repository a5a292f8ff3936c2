"""A fake coding CLI: `python cli.py NAME ARGS…` behaves as NAME (claude, codex, gemini, aider,
opencode) does in its non-interactive mode, as far as `liza supervise --agent NAME` can tell:

- it accepts exactly the flags NAME documents (fakes/flags.py) and exits 2 on any other;
- it reads the prompt and its MCP configuration where NAME reads them (`--mcp-config FILE`,
  `-c mcp_servers.*` TOML overrides, GEMINI_CLI_SYSTEM_SETTINGS_PATH, OPENCODE_CONFIG), starts
  that MCP server and talks to it with the official `mcp` client — or, as aider, writes `liza`
  commands in its reply;
- it honours the permissions it was given (fakes/brain.py refuses what they forbid);
- it prints NAME's output format (stream-json, JSONL events, aider's text) and exits 0.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
from collections import defaultdict
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mcp import ClientSession

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from tests.agents.client.fakes import brain, flags

TABLES = {
    "claude": flags.CLAUDE,
    "codex": flags.CODEX_EXEC,
    "gemini": flags.GEMINI,
    "aider": flags.AIDER,
    "opencode": flags.OPENCODE_RUN,
}
SUBCOMMAND = {"codex": "exec", "opencode": "run"}


def parse(name: str, argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    table = TABLES[name]
    if name in SUBCOMMAND:
        if not argv or argv[0] != SUBCOMMAND[name]:
            usage(name, f"expected the subcommand {SUBCOMMAND[name]!r}")
        argv = argv[1:]
    options: dict[str, list[str]] = defaultdict(list)
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-") and arg != "-":
            flag, _, inline = arg.partition("=")
            if flag not in table:
                usage(name, f"unknown option '{flag}'")
            if table[flag]:
                if inline:
                    options[flag].append(inline)
                else:
                    i += 1
                    if i >= len(argv):
                        usage(name, f"option '{flag}' needs a value")
                    options[flag].append(argv[i])
            else:
                options[flag].append("")
            i += 1
            continue
        positional.append(arg)
        i += 1
    return options, positional


def usage(name: str, message: str) -> None:
    print(f"{name}: error: {message}", file=sys.stderr)
    sys.exit(2)


def one(options: dict[str, list[str]], *names: str) -> str | None:
    for flag in names:
        if options.get(flag):
            return options[flag][-1]
    return None


class McpBoard:
    def __init__(self, session: ClientSession, naming) -> None:
        self.session, self.naming = session, naming

    def name(self, operation: str) -> str:
        return self.naming(operation)

    async def call(self, operation: str, **arguments: Any) -> Any:
        result = await self.session.call_tool(operation, arguments)
        if result.is_error:
            raise brain.Refused(f"{operation}: {result.content[0].text}")
        return result.structured_content


@asynccontextmanager
async def mcp_session(server: dict[str, Any]):
    # Imported here: the SDK costs ~1 s of CPU to import, which aider's fake (its reply holds
    # `liza` commands, no MCP) would pay at every session of the profile tests.
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=server["command"], args=list(server.get("args", [])), env=server.get("env")
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run_mcp(prompt: str, server: dict[str, Any] | None, naming, may, emit) -> None:
    if server is None:
        raise brain.Refused("no `liza` MCP server configured")

    async def go() -> list[str]:
        async with mcp_session(server) as session:
            return await brain.act(prompt, McpBoard(session, naming), Path.cwd(), may)

    for tool in anyio.run(go):
        emit(tool)


# -- the CLIs --------------------------------------------------------------------------------


def claude(argv: list[str]) -> None:
    options, positional = parse("claude", argv)
    prompt = one(options, "-p", "--print") is not None and (positional or [None])[0]
    if not prompt:
        usage("claude", "print mode needs a prompt")
    stream = one(options, "--output-format") == "stream-json"
    if stream and "--verbose" not in options:
        usage("claude", "--output-format=stream-json requires --verbose with --print")
    server = None
    if one(options, "--mcp-config"):
        servers = json.loads(Path(one(options, "--mcp-config")).read_text())["mcpServers"]
        server = servers.get("liza")
    allowed = ",".join(options.get("--allowedTools", [])).split(",")
    denied = ",".join(options.get("--disallowedTools", [])).split(",")
    mode = one(options, "--permission-mode")

    def permitted(tool: str) -> bool:
        base = tool.split("(")[0]
        if base in denied or tool in denied:
            return False
        return tool in allowed or base in allowed or (mode == "acceptEdits" and base == "Edit")

    may = {"edit": permitted("Write") and permitted("Edit"), "shell": permitted("Bash")}

    def naming(op: str) -> str:
        tool = f"mcp__liza__{op}"
        if not (permitted(tool) or "mcp__liza" in allowed):
            raise brain.Refused(f"{tool} is not allowed")
        return tool

    init = {"type": "system", "subtype": "init", "session_id": "fake",
            "mcp_servers": [{"name": "liza", "status": "connected"}]}  # fmt: skip
    print(json.dumps(init), flush=True)

    def emit(tool: str) -> None:
        print(json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": tool, "input": {}}]}}), flush=True)  # fmt: skip

    run_mcp(prompt, server, naming, may, emit)
    result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3,
              "result": "done", "total_cost_usd": 0.0123,
              "usage": {"input_tokens": 1200, "output_tokens": 300}}  # fmt: skip
    print(json.dumps(result), flush=True)


def codex(argv: list[str]) -> None:
    options, positional = parse("codex", argv)
    if len(positional) != 1:
        usage("codex", "exec takes one PROMPT")
    config: dict[str, Any] = {}
    for override in options.get("-c", []) + options.get("--config", []):
        key, _, value = override.partition("=")
        node = config
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = tomllib.loads(f"v = {value}")["v"]  # a TOML value, as codex parses it
    sandbox = one(options, "-s", "--sandbox") or "read-only"
    server = config.get("mcp_servers", {}).get("liza")
    if server is not None and server.get("default_tools_approval_mode") != "approve":
        server = None  # codex exec cancels an MCP call it would have to ask about
    shell = config.get("features", {}).get("shell_tool", True)
    may = {"edit": sandbox != "read-only", "shell": bool(shell)}
    print(json.dumps({"type": "thread.started", "thread_id": "fake"}), flush=True)

    def emit(tool: str) -> None:
        print(json.dumps({"type": "item.completed", "item": {
            "type": "mcp_tool_call", "server": "liza", "tool": tool.split(".", 1)[1],
            "status": "completed"}}), flush=True)  # fmt: skip

    run_mcp(positional[0], server, lambda op: f"liza.{op}", may, emit)
    tokens = {"input_tokens": 1500, "cached_input_tokens": 0, "output_tokens": 200}
    print(json.dumps({"type": "turn.completed", "usage": tokens}), flush=True)


def gemini(argv: list[str]) -> None:
    options, _ = parse("gemini", argv)
    prompt = one(options, "-p", "--prompt")
    if not prompt:
        usage("gemini", "no prompt (headless mode needs -p)")
    settings_path = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    settings = json.loads(Path(settings_path).read_text()) if settings_path else {}
    server = settings.get("mcpServers", {}).get("liza")
    names = one(options, "--allowed-mcp-server-names")
    if names is not None and "liza" not in names.split(","):
        server = None
    tools = settings.get("tools", {})
    core, exclude = tools.get("core"), tools.get("exclude", [])
    yolo = one(options, "--approval-mode") == "yolo" or "-y" in options or "--yolo" in options

    def has(tool: str) -> bool:
        return yolo and tool not in exclude and (core is None or tool in core)

    may = {"edit": has("write_file") and has("replace"), "shell": has("run_shell_command")}
    print(json.dumps({"type": "init", "session_id": "fake", "model": "gemini-fake"}), flush=True)

    def emit(tool: str) -> None:
        print(json.dumps({"type": "tool_use", "tool_name": tool, "parameters": {}}), flush=True)

    run_mcp(prompt, server if (server or {}).get("trust") else None, lambda op: op, may, emit)
    stats = {"total_tokens": 1700, "input_tokens": 1500, "output_tokens": 200}
    print(json.dumps({"type": "result", "status": "success", "stats": stats}), flush=True)


def opencode(argv: list[str]) -> None:
    _, positional = parse("opencode", argv)
    if not positional:
        usage("opencode", "run needs a message")
    prompt = " ".join(positional)
    path = os.environ.get("OPENCODE_CONFIG")
    config = json.loads(Path(path).read_text()) if path else {}
    entry = config.get("mcp", {}).get("liza")
    server = None
    if entry and entry.get("type") == "local" and entry.get("enabled", True):
        server = {"command": entry["command"][0], "args": entry["command"][1:],
                  "env": entry.get("environment")}  # fmt: skip
    rules = config.get("permission", {})
    may = {
        "edit": rules.get("edit", "allow") == "allow",
        "shell": rules.get("bash", "allow") == "allow",
    }

    def emit(tool: str) -> None:
        print(json.dumps({"type": "tool_use", "part": {
            "tool": tool, "state": {"status": "completed"}}}), flush=True)  # fmt: skip

    print(json.dumps({"type": "step_start", "part": {"type": "step-start"}}), flush=True)
    run_mcp(prompt, server, lambda op: f"liza_{op}", may, emit)
    print(json.dumps({"type": "step_finish", "part": {
        "tokens": {"input": 1500, "output": 200}, "cost": 0.01}}), flush=True)  # fmt: skip


class ReplyBoard:
    """aider: the `liza` commands it writes in its reply (the profile runs them)."""

    CLI = {
        "task_create": lambda a: [
            "task", "create", a["key"], "--description", a["description"],
            "--done-when", a["done_when"], "--spec-ref", a["spec_ref"],
            "--priority", str(a["priority"]),
            *[x for d in a.get("depends_on", []) for x in ("--depends-on", d)],
        ],
        "task_finalize": lambda a: ["task", "finalize", a["key"]],
        "sprint_create": lambda a: [
            "sprint", "create", *[x for k in a["planned"] for x in ("--planned", k)]
        ],
        "goal_complete": lambda a: ["goal", "complete", "--reason", a["reason"]],
        "submit": lambda a: [
            "submit", a["key"], "--commit", a["review_commit"], "--tree-clean",
            *(["--pr-url", a["pr_url"]] if a.get("pr_url") else []),
        ],
        "verdict": lambda a: [
            "review", "verdict", a["key"], a["verdict"], "--commit", a["review_commit"]
        ],
    }  # fmt: skip
    head = "HEAD"

    def __init__(self) -> None:
        self.lines: list[str] = []

    def name(self, operation: str) -> str:
        return "liza " + " ".join(_words(operation))

    async def call(self, operation: str, **arguments: Any) -> Any:
        self.lines.append(shlex.join(["liza", *self.CLI[operation](arguments)]))


def _words(operation: str) -> list[str]:
    return {"task_create": ["task", "create"], "task_finalize": ["task", "finalize"],
            "sprint_create": ["sprint", "create"], "goal_complete": ["goal", "complete"],
            "submit": ["submit"], "verdict": ["review", "verdict"]}[operation]  # fmt: skip


def aider(argv: list[str]) -> None:
    options, _ = parse("aider", argv)
    path = one(options, "--message-file", "-f")
    prompt = Path(path).read_text() if path else one(options, "--message", "--msg", "-m")
    if not prompt:
        usage("aider", "no message")
    ask = one(options, "--chat-mode", "--edit-format") == "ask"
    may = {"edit": not ask and "--dry-run" not in options, "shell": not ask}
    # aider commits its own edits (--auto-commits); it never runs a shell command itself.
    board = ReplyBoard()
    anyio.run(brain.act, prompt, board, Path.cwd(), may)
    print("Aider v0.86.0-fake\nModel: fake with diff edit format\n")
    print("Done.\n\n```liza\n" + "\n".join(board.lines) + "\n```\n")
    print("Tokens: 1.5k sent, 200 received. Cost: $0.01 message, $0.01 session.")


def main() -> None:
    name, argv = sys.argv[1], sys.argv[2:]
    try:
        {"claude": claude, "codex": codex, "gemini": gemini, "aider": aider,
         "opencode": opencode}[name](argv)  # fmt: skip
    except brain.Refused as refused:
        print(f"{name} (fake): refused: {refused}", flush=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
