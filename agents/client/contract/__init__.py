"""The REST API of one project, declared once (issue 22): every operation's name, HTTP method
and path, its parameters with their JSON types and bounds, the agent roles it is offered to, what
it answers, its errors and its description.

Django-free, so both sides read it: the server generates its routes from it (boards/api/urls.py
binds each name to its declared operation or view), and the client its HTTP methods
(agents/client/http.py), its MCP tools (agents/client/operations.py) and its `liza`
subcommands (agents/client/cli/generated.py). tests/contract/test_contract.py proves the
server's OpenAPI schema says the same: every operation here with its method, path and
parameters, every path there here. The server's serializers still validate (this table does not
replace them: it says what they accept, and the test holds the two equal).

`roles` only chooses what an agent is shown (its MCP tools): the server decides
(`require_role`), and tests/agents/client/test_operations.py drives every operation a role is
not shown to its refusal on a live server.

This package: `base` (the roles, `Param`, `Endpoint`), `exits` (the exit codes, the error
envelope) and one table a group of operations — `tasks`, `reviews`, `planning` (goal, sprint),
`oversight` (pause, config, notifications, alerts, circuit breaker, discoveries, anomalies,
budgets), `agents` (liveness, runs, usage, agents, keys) — assembled here as `CONTRACT`.
Importers use this package's names.
"""

from __future__ import annotations

from agents.client.contract import agents, oversight, planning, reviews, tasks
from agents.client.contract.base import (
    CODER,
    CODER_ONLY,
    EVERY_ROLE,
    GENERATION_HEADER,
    KEY,
    PLANNER,
    PLANNER_ONLY,
    REVIEWER,
    REVIEWER_ONLY,
    ROLES,
    WRITE_ERRORS,
    E,
    Endpoint,
    P,
    Param,
)
from agents.client.contract.exits import EXIT, RETRYABLE, error_envelope
from agents.client.contract.oversight import ALERT_TYPES, ANOMALY_TYPES

# One entry an operation, in the routes' order: a literal path comes before a parameter at the
# same place (`agents/register` before `agents/{agent_id}`, inside their table), and
# tests/contract/test_contract.py resolves every path to its own route. Liveness first: the order
# agents are shown their tools in (`liza mcp --help`).
CONTRACT: tuple[Endpoint, ...] = (
    *agents.LIVENESS,
    *tasks.TASKS,
    *reviews.REVIEWS,
    *planning.PLANNING,
    *oversight.OVERSIGHT,
    *agents.AGENTS,
)

BY_NAME: dict[str, Endpoint] = {e.name: e for e in CONTRACT}
BY_CLIENT: dict[str, Endpoint] = {e.client: e for e in CONTRACT if e.client}

__all__ = [
    "ALERT_TYPES",
    "ANOMALY_TYPES",
    "BY_CLIENT",
    "BY_NAME",
    "CODER",
    "CODER_ONLY",
    "CONTRACT",
    "EVERY_ROLE",
    "EXIT",
    "GENERATION_HEADER",
    "KEY",
    "PLANNER",
    "PLANNER_ONLY",
    "RETRYABLE",
    "REVIEWER",
    "REVIEWER_ONLY",
    "ROLES",
    "WRITE_ERRORS",
    "E",
    "Endpoint",
    "P",
    "Param",
    "error_envelope",
]
