"""The agent operations (SPEC §6) as every surface of the client offers them.

Each operation is a contract entry (agents.client.contract) offered to agent roles: its MCP tool
name, the `Client` method it calls, the roles, its parameters with their JSON types. `liza mcp`
makes each a tool whose input schema is `input_schema()`; the `liza` command line generates its
subcommand from the same entry (tests/agents/client/test_operations.py checks each has one,
taking the same parameters). One tool is the client's own: `usage`, one model's report, sent as
the contract's `usage_record`.

`roles` only chooses what an agent is shown: the server decides (`require_role`), and a test
drives every operation a role is not shown to its refusal on a live server, so this table cannot
offer what the server forbids nor hide what it allows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agents.client.contract import (
    CODER,
    CONTRACT,
    EVERY_ROLE,
    PLANNER,
    REVIEWER,
    ROLES,
    Endpoint,
    Param,
)
from agents.client.http import Answer, Client

__all__ = ["CODER", "EVERY_ROLE", "PLANNER", "REVIEWER", "ROLES", "Operation", "Param"]


@dataclass(frozen=True)
class Operation:
    name: str  # the MCP tool name
    method: str  # the Client method
    roles: frozenset[str]
    help: str
    params: tuple[Param, ...] = ()
    cli: tuple[str, ...] = ()  # the `liza` subcommand path

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def call(self, client: Client, arguments: dict[str, Any]) -> Any:
        """Run the operation with `arguments` (already checked against `input_schema`)."""
        args = [arguments[p.name] for p in self.params if p.where == "path"]
        kwargs = {
            p.name: arguments[p.name]
            for p in self.params
            if p.where != "path" and arguments.get(p.name) is not None
        }
        result = getattr(client, self.method)(*args, **kwargs)
        return result.body if isinstance(result, Answer) else result


def offered(endpoint: Endpoint) -> Operation:
    """The contract entry as its agents' tool: the parameters an agent gives (`tool`), those it
    must give although the server would default them (`tool_requires`) required."""
    params = tuple(
        replace(p, required=True) if p.name in endpoint.tool_requires else p
        for p in endpoint.params
        if p.tool
    )
    return Operation(
        endpoint.tool_name, endpoint.client, endpoint.roles, endpoint.help, params, endpoint.cli
    )


USAGE = Operation(
    "usage",
    "usage",
    EVERY_ROLE,
    "Report this session's token usage and cost so far for one model (running totals, "
    "not increments: reporting again counts once). Budgets stop work at 100 %.",
    (
        Param("model", "string", help="the model's name as the provider says it"),
        Param("input_tokens", "integer"),
        Param("output_tokens", "integer"),
        Param("cache_read_tokens", "integer"),
        Param("cache_write_tokens", "integer"),
        Param("cost_usd", "number", help="the session's cost so far in USD"),
    ),
    cli=("usage",),
)

OPERATIONS: tuple[Operation, ...] = (
    *(offered(endpoint) for endpoint in CONTRACT if endpoint.roles),
    USAGE,
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


def operations_for(role: str) -> tuple[Operation, ...]:
    """The operations an agent of `role` is offered."""
    return tuple(op for op in OPERATIONS if role in op.roles)
