"""`liza mcp`: the agent operations as MCP tools over stdio (the official `mcp` SDK).

The key decides everything: at start-up the server asks `/work` which role the key's agent has
(a read: it neither registers nor heartbeats, which stay the supervisor's) and offers only that
role's operations (agents.client.operations). Each tool's input schema is the operation's.

A refusal is an MCP tool error (`isError`), never a protocol error, so the model reads it: its
text says what happened and what to do, its structured content is the server's envelope plus
`exit` (the process exit code the CLI would take) and `stop` — true for exit 42 (lease lost,
paused, checkpoint, aborted), when the agent must end its session and let the supervisor
restart it; also true for exit 8 (`not_registered`: the agent left, its session is over).
A heartbeat or a `work` answer that says stop is reported the same way.

This module asks the role without the SDK; the server itself is `mcp_tools` (the SDK), imported
only once the key is known good: `import mcp` costs ~1 s of CPU (it loads the whole SDK, its
HTTP transports and every protocol version's models), which a refused key, a server away or a
mistyped URL need not pay before their one-line answer.
"""

from __future__ import annotations

import sys
from typing import Any

from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client
from agents.client.operations import ROLES, Operation

STOP = EXIT["stop"]
ENDED = EXIT["not_registered"]

# How a JSON value is checked against a parameter's declared type (bool is not an integer).
JSON_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def role_of(client: Client) -> str:
    """The role of the key's agent, as the server tells it."""
    return identity(client)[0]


def identity(client: Client) -> tuple[str, str]:
    """(role, agent id) of the key's agent, as the server tells it."""
    body = client.work().body
    role = body.get("role")
    if role not in ROLES:
        raise LizaError("not_an_agent", f"this key is not an agent's (role {role!r})")
    return role, body.get("agent") or ""


def check_arguments(operation: Operation, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments against the operation's schema; a mistake is a usage error (exit 2)."""
    known = {p.name: p for p in operation.params}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise UsageError(f"unknown argument(s) {', '.join(unknown)} for {operation.name}")
    for param in operation.params:
        value = arguments.get(param.name)
        if value is None:
            if param.required:
                raise UsageError(f"{param.name} is required")
            continue
        if not JSON_TYPES[param.type](value):
            raise UsageError(f"{param.name} must be a JSON {param.type}")
        if param.enum and value not in param.enum:
            raise UsageError(f"{param.name} must be one of {', '.join(param.enum)}")
    return arguments


def stop_in(operation: Operation, body: Any) -> LizaError | None:
    """A successful answer that still says stop (heartbeat `stop`, `work` exit 42)."""
    if not isinstance(body, dict) or body.get("exit") != STOP:
        return None
    code = body.get("stop") or "stop"
    reason = body.get("reason") or f"{operation.name} answered stop"
    return LizaError(
        str(code), str(reason), {k: v for k, v in body.items() if k != "exit"}, exit=STOP
    )


def run(client: Client) -> int:
    """Serve until the MCP client closes stdin; a key the server refuses ends it at once."""
    try:
        role, me = identity(client)
    except LizaError as error:
        print(f"liza mcp: {error.code}: {error.message}", file=sys.stderr)
        return error.exit
    from agents.client.mcp_tools import serve  # the SDK: only now (the module's docstring)

    serve(client, role, me)
    return 0
