"""The agent operations (SPEC §6), declared once for every surface of the client.

Each `Operation` names the `Client` method it calls, the agent roles it is offered to, and its
parameters with their JSON types. `liza mcp` makes each a tool whose input schema is
`input_schema()`; the `liza` command line is checked against the same table (every operation
has its subcommand, taking the same parameters: tests/agents/client/test_operations.py).

`roles` only chooses what an agent is shown: the server decides (`require_role`), and a test
drives every operation a role is not shown to its refusal on a live server, so this table cannot
offer what the server forbids nor hide what it allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.client.http import Client
from agents.client.wire import VERDICTS

PLANNER, CODER, REVIEWER = "planner", "coder", "code_reviewer"
ROLES: tuple[str, ...] = (PLANNER, CODER, REVIEWER)
EVERY_ROLE = frozenset(ROLES)


@dataclass(frozen=True)
class Param:
    name: str  # the Client method's keyword (and the JSON field)
    type: str  # JSON Schema type: string, integer, boolean, array (of strings), object
    help: str = ""
    required: bool = False
    positional: bool = False  # passed positionally to the Client method (the task key)
    enum: tuple[str, ...] = ()
    items: str = "string"  # the element type of an array


@dataclass(frozen=True)
class Operation:
    name: str  # the MCP tool name
    method: str  # the Client method
    roles: frozenset[str]
    help: str
    params: tuple[Param, ...] = ()
    cli: tuple[str, ...] = ()  # the `liza` subcommand path

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for param in self.params:
            prop: dict[str, Any] = {"type": param.type}
            if param.help:
                prop["description"] = param.help
            if param.enum:
                prop["enum"] = list(param.enum)
            if param.type == "array":
                prop["items"] = {"type": param.items}
            properties[param.name] = prop
        return {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def call(self, client: Client, arguments: dict[str, Any]) -> Any:
        """Run the operation with `arguments` (already checked against `input_schema`)."""
        args = [arguments[p.name] for p in self.params if p.positional]
        kwargs = {
            p.name: arguments[p.name]
            for p in self.params
            if not p.positional and arguments.get(p.name) is not None
        }
        result = getattr(client, self.method)(*args, **kwargs)
        return result.body if self.method == "work" else result


KEY = Param("key", "string", "the task key", required=True, positional=True)
REASON = Param("reason", "string", "why", required=True)
BASE_COMMIT = Param("base_commit", "string", "integration HEAD when claiming", required=True)
WORKTREE = Param("worktree", "string", "the git worktree the coder works in")

OPERATIONS: tuple[Operation, ...] = (
    # -- every role: liveness, work, records, reads
    Operation(
        "work",
        "work",
        EVERY_ROLE,
        "Is there work for this role now? `exit` 0: the role is complete; `retry_after`: "
        "ask again then.",
        cli=("work",),
    ),
    Operation(
        "heartbeat",
        "heartbeat",
        EVERY_ROLE,
        "Extend this agent's leases (task and review). A stop (pause, checkpoint, abort) comes "
        "back as an error with stop=true: end the session.",
        (Param("context_percent", "integer", "how full the context window is, 0-100"),),
        cli=("heartbeat",),
    ),
    Operation(
        "discover",
        "discover",
        EVERY_ROLE,
        "Record a discovery: something found outside the task's scope.",
        (
            Param("description", "string", required=True),
            Param("severity", "string", required=True, enum=("critical", "high", "medium", "low")),
            Param("urgency", "string", enum=("immediate", "deferred")),
            Param("during", "string", "the task it was found during"),
            Param("recommendation", "string"),
        ),
        cli=("discover",),
    ),
    Operation(
        "anomaly",
        "anomaly",
        EVERY_ROLE,
        "Record an anomaly (seed 002's types, each with its required detail fields).",
        (
            Param("type", "string", required=True),
            Param("details", "object", "the type's fields", required=True),
            Param("task", "string", "the task key it concerns"),
        ),
        cli=("anomaly",),
    ),
    Operation(
        "log",
        "log",
        EVERY_ROLE,
        "Append a line to the project's activity log.",
        (
            Param("action", "string", "a short word, like a task key", required=True),
            Param("detail", "string", required=True),
            Param("task", "string"),
        ),
        cli=("log",),
    ),
    Operation(
        "usage",
        "usage",
        EVERY_ROLE,
        "Report this session's token usage and cost so far for one model (running totals, "
        "not increments: reporting again counts once). Budgets stop work at 100 %.",
        (
            Param("model", "string", "the model's name as the provider says it"),
            Param("input_tokens", "integer"),
            Param("output_tokens", "integer"),
            Param("cache_read_tokens", "integer"),
            Param("cache_write_tokens", "integer"),
            Param("cost_usd", "number", "the session's cost so far in USD"),
        ),
        cli=("usage",),
    ),
    Operation(
        "task_show",
        "task",
        EVERY_ROLE,
        "One task with every field, its reviews and history.",
        (KEY,),
        cli=("task", "show"),
    ),
    Operation(
        "tasks",
        "tasks",
        EVERY_ROLE,
        "The project's tasks (the board), optionally filtered.",
        (
            Param("status", "string", "one task state"),
            Param("assigned_to", "string", "an agent id"),
            Param("q", "string", "text in key or description"),
        ),
        cli=("status",),
    ),
    Operation("goal_show", "goal", EVERY_ROLE, "The project's goal.", cli=("goal", "show")),
    Operation("sprint_show", "sprint", EVERY_ROLE, "The current sprint.", cli=("sprint", "show")),
    # -- the coder
    Operation(
        "claim",
        "claim",
        frozenset({CODER}),
        "Claim one task (UNCLAIMED with its dependencies MERGED, your REJECTED one, an "
        "INTEGRATION_FAILED one, or one whose lease expired).",
        (KEY, BASE_COMMIT, WORKTREE),
        cli=("claim",),
    ),
    Operation(
        "claim_next",
        "claim_next",
        frozenset({CODER}),
        "Claim the best claimable task; null when there is none (ask `work` when to retry).",
        (BASE_COMMIT, WORKTREE),
        cli=("claim-next",),
    ),
    Operation(
        "submit",
        "submit",
        frozenset({CODER}),
        "Request review of your claimed task at a commit, attesting a clean tree.",
        (
            KEY,
            Param("review_commit", "string", "the commit to review", required=True),
            Param("tree_clean", "boolean", "`git status --porcelain` is empty", required=True),
            Param("pr_url", "string", "the pull request you opened for it (http(s) address)"),
        ),
        cli=("submit",),
    ),
    Operation(
        "block",
        "block",
        frozenset({CODER}),
        "Block your task with the questions a human must answer.",
        (
            KEY,
            REASON,
            Param("questions", "array", "one or more questions", required=True),
            Param("attempted", "array", "what you tried"),
        ),
        cli=("block",),
    ),
    Operation(
        "handoff",
        "handoff",
        frozenset({CODER}),
        "Hand your task over to the next session (context exhausted).",
        (
            KEY,
            Param("summary", "string", required=True),
            Param("next_action", "string", required=True),
            Param("context_used", "string"),
            Param("approach", "string"),
            Param("blockers", "string"),
            Param("files_modified", "array"),
            Param("next_steps", "array"),
        ),
        cli=("handoff",),
    ),
    Operation(
        "pickup",
        "pickup",
        frozenset({CODER}),
        "Pick up the handoff notes of your task.",
        (KEY,),
        cli=("pickup",),
    ),
    # -- the code reviewer
    Operation(
        "review_claim",
        "review_claim",
        frozenset({REVIEWER}),
        "Claim the review of a READY_FOR_REVIEW task.",
        (KEY,),
        cli=("review", "claim"),
    ),
    Operation(
        "review_extend",
        "review_extend",
        frozenset({REVIEWER}),
        "Extend your review lease.",
        (KEY,),
        cli=("review", "extend"),
    ),
    Operation(
        "verdict",
        "verdict",
        frozenset({REVIEWER}),
        "Approve or reject the task you are reviewing, at the commit you reviewed.",
        (
            KEY,
            Param("verdict", "string", required=True, enum=VERDICTS),
            Param("review_commit", "string", "the commit reviewed", required=True),
            Param("reason", "string", "required to reject"),
        ),
        cli=("review", "verdict"),
    ),
    Operation(
        "merge",
        "merge",
        frozenset({REVIEWER}),
        "Report the APPROVED task merged into integration at a commit.",
        (KEY, Param("merge_commit", "string", required=True)),
        cli=("merge",),
    ),
    Operation(
        "integration_failed",
        "integration_failed",
        frozenset({REVIEWER}),
        "Report that the APPROVED task failed to merge, with the git error.",
        (KEY, REASON),
        cli=("integration-failed",),
    ),
    # -- the planner
    Operation(
        "goal_create",
        "goal_create",
        frozenset({PLANNER}),
        "Set the project's goal.",
        (Param("description", "string", required=True), Param("spec_ref", "string")),
        cli=("goal", "create"),
    ),
    Operation(
        "goal_complete",
        "goal_complete",
        frozenset({PLANNER}),
        "Mark the goal complete once its work is merged.",
        (REASON,),
        cli=("goal", "complete"),
    ),
    Operation(
        "task_create",
        "task_create",
        frozenset({PLANNER}),
        "Create a DRAFT task.",
        (
            Param("key", "string", "the new task's key", required=True),
            Param("description", "string", required=True),
            Param("done_when", "string", "how a reviewer knows it is done"),
            Param("spec_ref", "string"),
            Param("scope", "string"),
            Param("priority", "integer", "1 (first) to 5"),
            Param("criticality", "string"),
            Param("depends_on", "array", "task keys"),
            Param("sprint_scope", "string", enum=("planned", "stretch")),
        ),
        cli=("task", "create"),
    ),
    Operation(
        "task_finalize",
        "task_finalize",
        frozenset({PLANNER}),
        "DRAFT → UNCLAIMED: coders may claim it.",
        (KEY,),
        cli=("task", "finalize"),
    ),
    Operation(
        "task_dependencies",
        "task_dependencies",
        frozenset({PLANNER}),
        "Set a task's dependencies (an empty list clears them).",
        (KEY, Param("depends_on", "array", "task keys", required=True)),
        cli=("task", "dependencies"),
    ),
    Operation(
        "task_rescope",
        "task_rescope",
        frozenset({PLANNER}),
        "Supersede a BLOCKED task by new ones.",
        (
            KEY,
            REASON,
            Param(
                "new_tasks",
                "array",
                "task objects: key, description, done_when …",
                required=True,
                items="object",
            ),
        ),
        cli=("task", "rescope"),
    ),
    Operation(
        "task_abandon",
        "task_abandon",
        frozenset({PLANNER}),
        "Abandon a task that will not be done.",
        (KEY, REASON),
        cli=("task", "abandon"),
    ),
    Operation(
        "task_release",
        "task_release",
        frozenset({PLANNER}),
        "Answer a BLOCKED task and put it back in the queue.",
        (KEY, REASON),
        cli=("task", "release"),
    ),
    Operation(
        "sprint_create",
        "sprint_create",
        frozenset({PLANNER}),
        "Open (and start) a sprint of the goal with planned and stretch task keys.",
        (
            Param("planned", "array", "task keys"),
            Param("stretch", "array", "task keys"),
            Param("deadline", "string", "ISO 8601, in the future"),
        ),
        cli=("sprint", "create"),
    ),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


def operations_for(role: str) -> tuple[Operation, ...]:
    """The operations an agent of `role` is offered."""
    return tuple(op for op in OPERATIONS if role in op.roles)
