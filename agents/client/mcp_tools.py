"""`liza mcp`'s server on the official `mcp` SDK: the role's operations as tools, upstream
Liza's names for some of them, the read-only resources (the rules: agents.client.mcp_server).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from agents.client.errors import LizaError, UsageError
from agents.client.http import Client
from agents.client.mcp_server import ENDED, STOP, check_arguments, stop_in
from agents.client.operations import BY_NAME, operations_for
from agents.client.upstream import BY_ALIAS, RESOURCES, aliases_for
from agents.client.upstream import read as read_resource


def error_result(error: LizaError) -> types.CallToolResult:
    stop = error.exit in (STOP, ENDED)
    envelope = error.as_dict()["error"]
    payload = {"error": {**envelope, "exit": error.exit, "stop": stop}}
    if error.exit == ENDED:
        advice = f"ENDED: this agent left; end this session now, nothing restarts it (exit {ENDED})"
    elif stop:
        advice = "STOP: end this session now; the supervisor restarts it (exit 42)."
    else:
        advice = f"refused (exit {error.exit}); read the board again before retrying."
    return types.CallToolResult(
        content=[types.TextContent(text=f"{error.code}: {error.message}\n{advice}")],
        structured_content=payload,
        is_error=True,
    )


def _tools(operations: dict[str, Any], aliases: dict[str, Any]) -> list[types.Tool]:
    """The role's tools: its operations, then upstream Liza's names for some of them."""
    return [
        types.Tool(name=op.name, description=op.help, input_schema=op.input_schema())
        for op in operations.values()
    ] + [
        types.Tool(
            name=a.name,
            description=f"{a.help} (upstream Liza's name for `{a.operation}`)",
            input_schema=a.input_schema(),
        )
        for a in aliases.values()
    ]


def _answer(body: Any) -> types.CallToolResult:
    """An operation's answer: its JSON as text, and as structured content (an object)."""
    structured = body if isinstance(body, dict) else {"result": body}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, indent=2, sort_keys=True))],
        structured_content=structured,
    )


def _already(answer: dict[str, Any]) -> types.CallToolResult:
    """An upstream alias's answer when what it asks is done already (no operation runs)."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(answer, sort_keys=True))],
        structured_content=answer,
    )


def _resources() -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                name=uri.removeprefix("liza://"),
                uri=uri,
                description=f"{text} (read-only)",
                mime_type="application/json",
            )
            for uri, text in RESOURCES.items()
        ]
    )


def build_server(
    client: Client, role: str, me: str = "", env: dict[str, str] | None = None
) -> Server:
    operations = {op.name: op for op in operations_for(role)}
    aliases = {a.name: a for a in aliases_for(role)}
    env = dict(os.environ if env is None else env)
    tools = _tools(operations, aliases)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        operation = operations.get(params.name)
        alias = aliases.get(params.name)
        try:
            arguments = dict(params.arguments or {})
            if alias is not None:
                operation = operations[alias.operation]
                check_arguments(alias, arguments)  # upstream's schema first
                arguments = await anyio.to_thread.run_sync(
                    alias.arguments, client, arguments, me, env
                )
                if alias.already is not None:
                    answer = await anyio.to_thread.run_sync(alias.already, client, arguments, me)
                    if answer is not None:
                        return _already(answer)
            if operation is None:
                known = params.name in BY_NAME or params.name in BY_ALIAS
                hint = " (not this role's)" if known else ""
                raise UsageError(
                    f"no tool {params.name}{hint}; a {role} has {', '.join(operations)}"
                )
            arguments = check_arguments(operation, arguments)
            # The client is synchronous (httpx, retries with sleeps): off the event loop.
            body = await anyio.to_thread.run_sync(operation.call, client, arguments)
            stop = stop_in(operation, body)
            if stop is not None:
                raise stop
        except LizaError as error:
            return error_result(error)
        return _answer(body)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return _resources()

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        body = await anyio.to_thread.run_sync(read_resource, client, role, uri)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="application/json", text=json.dumps(body, sort_keys=True)
                )
            ]
        )

    return Server(
        "liza",
        instructions=f"Liza Board: the protocol's operations for this {role} (project "
        f"{client.project}); upstream Liza's `liza_*` names answer too. A tool error with "
        "stop=true means: end the session now.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read,
    )


async def _serve(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(client: Client, role: str, me: str) -> None:
    """Serve `role`'s tools over stdio until the MCP client closes stdin."""
    anyio.run(_serve, build_server(client, role, me))
