"""The REST API of one project, declared once (issue 22): every operation's name, HTTP method
and path, its parameters with their JSON types and bounds, the agent roles it is offered to, what
it answers, its errors and its description.

Django-free, so both sides read it: the server generates its routes from it (boards/api/urls.py
binds each name to its declared operation or view), and the client its HTTP methods
(agents/client/http.py), its MCP tools (agents/client/operations.py) and its `liza`
subcommands (agents/client/cli.py). tests/contract/test_contract.py proves the server's OpenAPI
schema says the same: every operation here with its method, path and parameters, every path
there here. The server's serializers still validate (this table does not replace them: it says
what they accept, and the test holds the two equal).

`roles` only chooses what an agent is shown (its MCP tools): the server decides
(`require_role`), and tests/agents/client/test_operations.py drives every operation a role is
not shown to its refusal on a live server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.client.wire import VERDICTS

PLANNER, CODER, REVIEWER = "planner", "coder", "code_reviewer"
ROLES: tuple[str, ...] = (PLANNER, CODER, REVIEWER)
EVERY_ROLE = frozenset(ROLES)
PLANNER_ONLY, CODER_ONLY, REVIEWER_ONLY = (
    frozenset({PLANNER}),
    frozenset({CODER}),
    frozenset({REVIEWER}),
)

# What an agent process does with an answer (seed 000 "Exit Codes", SPEC §13): the server's one
# table (boards.errors `Exit` is built from it), and the client's for what the server cannot say.
EXIT: dict[str, int] = {
    "ok": 0,
    "usage": 2,  # the CLI was called wrongly (never sent)
    "refused": 3,  # validation, permission, authentication: fix the call, do not retry as is
    "conflict": 4,  # invalid transition or a lost race: read the board again
    "not_found": 5,  # no such object (or another tenant's)
    "collision": 6,  # the agent id is held by a live lease: the process must exit
    "unreachable": 7,  # the server did not answer (or answered 5xx): retry later
    "wait": 11,  # an enforced limit holds (WIP, max_concurrent): ask again after Retry-After
    "budget": 14,  # a budget is spent: nothing more until an admin raises it
    "stop": 42,  # lease lost, paused, checkpoint, aborted: stop and restart (seed 000)
}

# The errors a write answers unless its entry says otherwise.
WRITE_ERRORS = (400, 401, 403, 404, 409)


@dataclass(frozen=True)
class Param:
    name: str  # the JSON field, query parameter or path segment (and the client's keyword)
    type: str  # JSON Schema type: string, integer, number, boolean, array, object; any
    where: str = "body"  # body, query or path
    required: bool = False
    enum: tuple[str, ...] = ()
    items: str = "string"  # the element type of an array
    max_items: int | None = None
    max_length: int | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    nullable: bool = False
    help: str = ""
    # The agent surfaces: offered as a tool parameter and a `liza` option (False: the
    # supervisor's or the client's own, e.g. `progress_at`, `change_summary`).
    tool: bool = True
    flag: str = ""  # the `liza` option when it is not --<name>
    argument: bool = False  # a positional `liza` argument (path parameters always are)

    def schema(self) -> dict[str, Any]:
        """The parameter as a JSON Schema property (the MCP tools' input schemas)."""
        prop: dict[str, Any] = {} if self.type == "any" else {"type": self.type}
        if self.help:
            prop["description"] = self.help
        if self.enum:
            prop["enum"] = list(self.enum)
        if self.type == "array":
            prop["items"] = {"type": self.items}
        return prop

    def bounds(self) -> dict[str, Any]:
        """What the OpenAPI schema must say of it (tests/contract/test_contract.py)."""
        said: dict[str, Any] = {"type": self.type}
        if self.enum:
            said["enum"] = tuple(self.enum)
        if self.type == "array":
            said["items"] = self.items
        for name in ("max_items", "max_length", "minimum", "maximum"):
            if getattr(self, name) is not None:
                said[name] = getattr(self, name)
        if self.nullable:
            said["nullable"] = True
        return said


@dataclass(frozen=True)
class Endpoint:
    name: str  # the server's declared operation (boards.operations), else its view's name
    method: str  # GET, POST, PUT, PATCH
    path: str  # below /api/v1/projects/{slug}/, path parameters in braces
    route: str  # the server's URL name
    operation_id: str  # OpenAPI's
    result: str  # what it answers: "task" is {"task": …}, a list is plural
    status: int = 200
    errors: tuple[int, ...] = WRITE_ERRORS
    params: tuple[Param, ...] = ()
    description: str = ""  # OpenAPI's; empty: the service's docstring (server side)
    # -- the client
    client: str = ""  # the agents.client.http.Client method ("": none)
    tool: str = ""  # the MCP tool, when `roles` is not empty (default: the client method)
    roles: frozenset[str] = frozenset()  # the agent roles offered it as a tool
    cli: tuple[str, ...] = ()  # the `liza` subcommand path
    help: str = ""  # one line for an agent (the tool's and the subcommand's help)
    tool_requires: tuple[str, ...] = ()  # optional on the server, asked of an agent's tool

    @property
    def tool_name(self) -> str:
        return self.tool or self.client

    def where(self, place: str) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.where == place)

    def url(self, **names: Any) -> str:
        """The path with its parameters filled in."""
        return self.path.format(**names)


P, E = Param, Endpoint
KEY = P("key", "string", where="path", required=True, help="the task key")

# The server's alert types and seed 002's anomaly types, as the wire spells them.
ALERT_TYPES: tuple[str, ...] = (
    "agent_error",
    "approaching_limits",
    "awaiting_approval",
    "blocked",
    "budget",
    "circuit_breaker",
    "hypothesis_exhaustion",
    "immediate_discovery",
    "integration_failed",
    "invalid_state",
    "lease_expired",
    "orphaned_rejected",
    "quota",
    "reassigned",
    "review_lease_expired",
    "review_loop",
    "run_stalled",
    "sprint_deadline",
    "stale_checkpoint",
    "stale_draft",
    "stale_pause",
    "stalled",
    "state_timeout",
    "webhook_failing",
)
ANOMALY_TYPES: tuple[str, ...] = (
    "retry_loop",
    "trade_off",
    "spec_ambiguity",
    "external_blocker",
    "assumption_violated",
    "scope_deviation",
    "workaround",
    "debt_created",
    "spec_changed",
    "hypothesis_exhaustion",
    "spec_gap",
    "review_deadlock",
    "system_ambiguity",
)

# One entry an operation, in the routes' order (a literal path before a parameter at the same
# place). Kept as a table, one field after another: `ruff format` would put each on its own line.
# fmt: off
CONTRACT: tuple[Endpoint, ...] = (
    # Liveness first: the order agents are shown their tools in (`liza mcp --help`).
    E("work_for_role", "GET", "work", "api-work", "work_for_role", result="work",
        errors=(400, 401, 403, 404),
        params=(
            P(
                "role", "string", where="query", enum=("code_reviewer", "coder", "planner"),
                tool=False,
            ),
        ),
        client="work", roles=EVERY_ROLE, cli=("work",),
        help=(
            "Is there work for this role now? `exit` 0: the role is complete; `retry_after`: ask "
            "again then."
        ),
    ),
    E("agents_heartbeat", "POST", "agents/heartbeat", "api-heartbeat", "agents_heartbeat",
        result="heartbeat",
        params=(
            P(
                "context_percent", "integer", minimum=0, maximum=100, nullable=True,
                help="how full the context window is, 0-100",
            ),
            P("progress_at", "string", nullable=True, tool=False),
        ),
        client="heartbeat", roles=EVERY_ROLE, cli=("heartbeat",),
        help=(
            "Extend this agent's leases (task and review). A stop (pause, checkpoint, abort) "
            "comes back as an error with stop=true: end the session."
        ),
    ),
    E("tasks_list", "GET", "tasks", "api-tasks", "tasks_list", result="tasks",
        errors=(400, 401, 403, 404),
        params=(
            P("assigned_to", "string", where="query", help="an agent id"),
            P(
                "criticality", "string", where="query",
                enum=("complex", "security-sensitive", "standard"),
            ),
            P("goal", "string", where="query"),
            P("priority", "integer", where="query"),
            P("q", "string", where="query", help="text in key or description", flag="--search"),
            P("sprint", "string", where="query"),
            P("status", "array", where="query", help="task states", flag="--status"),
        ),
        client="tasks", roles=EVERY_ROLE, cli=("status",),
        help="The project's tasks (the board), optionally filtered.",
    ),
    E("task_create", "POST", "tasks", "api-tasks", "tasks_create", result="task", status=201,
        params=(
            P(
                "key", "string", required=True, max_length=64, help="the new task's key",
                argument=True,
            ),
            P("description", "string", required=True, max_length=10000),
            P("priority", "integer", minimum=1, maximum=5, help="1 (first) to 5"),
            P("spec_ref", "string", max_length=500),
            P("done_when", "string", max_length=10000, help="how a reviewer knows it is done"),
            P("scope", "string", max_length=10000),
            P("criticality", "string", enum=("standard", "complex", "security-sensitive")),
            P("max_iterations", "integer", minimum=1, maximum=1000, nullable=True),
            P("max_review_cycles", "integer", minimum=1, maximum=1000, nullable=True),
            P("lease_duration_override", "integer", minimum=30, maximum=86400, nullable=True),
            P("needs_human_approval", "boolean"),
            P("depends_on", "array", max_items=200, help="task keys"),
            P("sprint_scope", "string", enum=("planned", "stretch"), nullable=True),
        ),
        client="task_create", roles=PLANNER_ONLY, cli=("task", "create"),
        help="Create a DRAFT task.",
    ),
    E("task_claim_next", "POST", "tasks/claim-next", "api-claim-next", "tasks_claim_next",
        result="task",
        params=(
            P("base_commit", "string", max_length=64, help="integration HEAD when claiming"),
            P("worktree", "string", max_length=500, help="the git worktree the coder works in"),
        ),
        client="claim_next", roles=CODER_ONLY, cli=("claim-next",), tool_requires=("base_commit",),
        description=(
            "Claim the best claimable task (own REJECTED, INTEGRATION_FAILED, UNCLAIMED with "
            "every dependency MERGED by priority then age, CLAIMED with a lease expired more than"
            " lease_grace ago) under FOR UPDATE SKIP LOCKED; a coder that holds a live claim gets"
            " it back. `task` is null when there is none."
        ),
        help="Claim the best claimable task; null when there is none (ask `work` when to retry).",
    ),
    E("review_claim_next", "POST", "reviews/claim-next", "api-review-claim-next",
        "reviews_claim_next", result="next_review", errors=(401, 403, 404, 409),
        client="review_claim_next", cli=("review", "claim-next"),
        description=(
            "Claim the best review open to this reviewer (READY_FOR_REVIEW by priority then age, "
            "the very slot rule of review/claim); a reviewer holding a live review gets it back. "
            "`review` and `task` are null when there is none."
        ),
    ),
    E("tasks_retrieve", "GET", "tasks/{key}", "api-task", "tasks_retrieve",
        result="task_detail", errors=(401, 403, 404),
        params=(KEY,),
        client="task", tool="task_show", roles=EVERY_ROLE, cli=("task", "show"),
        help="One task with every field, its reviews and history.",
    ),
    E("task_edit", "PATCH", "tasks/{key}", "api-task", "tasks_edit", result="task",
        params=(
            KEY,
            P("description", "string", max_length=10000),
            P("done_when", "string", max_length=10000),
            P("spec_ref", "string", max_length=500),
            P("scope", "string", max_length=10000),
            P("priority", "integer", minimum=1, maximum=5, help="1 (first) to 5: reorders"),
            P("criticality", "string", enum=("standard", "complex", "security-sensitive")),
            P("needs_human_approval", "boolean"),
            P("depends_on", "array", max_items=200, help="task keys: replace them"),
        ),
        client="task_edit", roles=PLANNER_ONLY, cli=("task", "edit"),
        help="Edit a task: its contract while DRAFT or UNCLAIMED, its priority until it ends.",
    ),
    E("task_claim", "POST", "tasks/{key}/claim", "api-claim", "tasks_claim", result="task",
        params=(
            KEY,
            P("base_commit", "string", max_length=64, help="integration HEAD when claiming"),
            P("worktree", "string", max_length=500, help="the git worktree the coder works in"),
        ),
        client="claim", roles=CODER_ONLY, cli=("claim",), tool_requires=("base_commit",),
        help=(
            "Claim one task (UNCLAIMED with its dependencies MERGED, your REJECTED one, an "
            "INTEGRATION_FAILED one, or one whose lease expired)."
        ),
    ),
    E("task_submit_for_review", "POST", "tasks/{key}/request-review", "api-request-review",
        "tasks_request_review", result="task",
        params=(
            KEY,
            P(
                "review_commit", "string", required=True, max_length=64,
                help="the commit to review", flag="--commit",
            ),
            P("tree_clean", "boolean", required=True, help="`git status --porcelain` is empty"),
            P("change_summary", "object", tool=False),
        ),
        client="submit", roles=CODER_ONLY, cli=("submit",),
        help="Request review of your claimed task at a commit, attesting a clean tree.",
    ),
    E("task_block", "POST", "tasks/{key}/block", "api-block", "tasks_block", result="task",
        params=(
            KEY,
            P("reason", "string", required=True, max_length=2000, help="why"),
            P(
                "questions", "array", required=True, max_items=3, help="one or more questions",
                flag="--question",
            ),
            P("attempted", "array", max_items=100, help="what you tried"),
        ),
        client="block", roles=CODER_ONLY, cli=("block",),
        help="Block your task with the questions a human must answer.",
    ),
    E("review_claim", "POST", "tasks/{key}/review/claim", "api-review-claim", "reviews_claim",
        result="review", status=201, errors=(401, 403, 404, 409),
        params=(KEY,),
        client="review_claim", roles=REVIEWER_ONLY, cli=("review", "claim"),
        help="Claim the review of a READY_FOR_REVIEW task.",
    ),
    E("review_extend", "POST", "tasks/{key}/review/extend", "api-review-extend",
        "reviews_extend", result="review", errors=(401, 403, 404, 409),
        params=(KEY,),
        client="review_extend", roles=REVIEWER_ONLY, cli=("review", "extend"),
        help="Extend your review lease.",
    ),
    E("review_verdict", "POST", "tasks/{key}/verdict", "api-verdict", "reviews_verdict",
        result="task",
        params=(
            KEY,
            P("verdict", "string", required=True, enum=VERDICTS, argument=True),
            P(
                "review_commit", "string", required=True, max_length=64, help="the commit reviewed",
                flag="--commit",
            ),
            P("reason", "string", max_length=5000, help="required to reject"),
        ),
        client="verdict", roles=REVIEWER_ONLY, cli=("review", "verdict"),
        help="Approve or reject the task you are reviewing, at the commit you reviewed.",
    ),
    E("task_report_merge", "POST", "tasks/{key}/merge", "api-merge", "tasks_report_merge",
        result="task",
        params=(KEY, P("merge_commit", "string", required=True, max_length=64, flag="--commit")),
        client="merge", roles=REVIEWER_ONLY, cli=("merge",),
        help="Report the APPROVED task merged into integration at a commit.",
    ),
    E("task_report_integration_failure", "POST", "tasks/{key}/integration-failure",
        "api-integration-failure", "tasks_report_integration_failure", result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000, help="why")),
        client="integration_failed", roles=REVIEWER_ONLY, cli=("integration-failed",),
        help="Report that the APPROVED task failed to merge, with the git error.",
    ),
    E("task_finalize", "POST", "tasks/{key}/finalize", "api-finalize", "tasks_finalize",
        result="task", errors=(401, 403, 404, 409),
        params=(KEY,),
        client="task_finalize", roles=PLANNER_ONLY, cli=("task", "finalize"),
        help="DRAFT → UNCLAIMED: coders may claim it.",
    ),
    E("task_set_dependencies", "PUT", "tasks/{key}/dependencies", "api-dependencies",
        "tasks_set_dependencies", result="task",
        params=(
            KEY,
            P("depends_on", "array", required=True, max_items=200, help="task keys", flag="--on"),
        ),
        client="task_dependencies", roles=PLANNER_ONLY, cli=("task", "dependencies"),
        help="Set a task's dependencies (an empty list clears them).",
    ),
    E("task_rescope", "POST", "tasks/{key}/rescope", "api-rescope", "tasks_rescope",
        result="tasks", status=201,
        params=(
            KEY,
            P("reason", "string", required=True, max_length=2000, help="why"),
            P(
                "new_tasks", "array", required=True, items="object",
                help="task objects: key, description, done_when …",
            ),
        ),
        client="task_rescope", roles=PLANNER_ONLY, cli=("task", "rescope"),
        help="Supersede a BLOCKED task by new ones.",
    ),
    E("task_abandon", "POST", "tasks/{key}/abandon", "api-abandon", "tasks_abandon",
        result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000, help="why")),
        client="task_abandon", roles=PLANNER_ONLY, cli=("task", "abandon"),
        help="Abandon a task that will not be done.",
    ),
    E("task_release", "POST", "tasks/{key}/release", "api-release", "tasks_release",
        result="task",
        params=(
            KEY,
            P(
                "reason", "string", required=True, max_length=2000,
                help="the answer to the task's questions",
            ),
        ),
        client="task_release", roles=PLANNER_ONLY, cli=("task", "release"),
        description="BLOCKED → UNCLAIMED with the answer (failed_by kept).",
        help="Answer a BLOCKED task and put it back in the queue.",
    ),
    E("task_override_block", "POST", "tasks/{key}/override-block", "api-override-block",
        "tasks_override_block", result="task",
        params=(
            KEY,
            P("reason", "string", required=True, max_length=2000),
            P("questions", "array", max_items=3),
        ),
        description="Human admins only: block any non-terminal task (SPEC §5.1).",
    ),
    E("agent_handoff", "POST", "tasks/{key}/handoff", "api-handoff", "tasks_handoff",
        result="handoff", status=201,
        params=(
            KEY,
            P("summary", "string", required=True, max_length=500),
            P("next_action", "string", required=True, max_length=500),
            P("context_used", "string", max_length=16),
            P("approach", "string", max_length=5000),
            P("blockers", "string", max_length=5000),
            P("files_modified", "array", max_items=500, flag="--file"),
            P("next_steps", "array", max_items=100, flag="--next-step"),
        ),
        client="handoff", roles=CODER_ONLY, cli=("handoff",),
        help="Hand your task over to the next session (context exhausted).",
    ),
    E("agent_handoff_pickup", "POST", "tasks/{key}/handoff/pickup", "api-handoff-pickup",
        "tasks_handoff_pickup", result="handoff", errors=(401, 403, 404, 409),
        params=(KEY,),
        client="pickup", roles=CODER_ONLY, cli=("pickup",),
        help="Pick up the handoff notes of your task.",
    ),
    E("task_release_claim", "POST", "tasks/{key}/release-claim", "api-release-claim",
        "tasks_release_claim", result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000)),
        description=(
            "Admins: release a stuck claim. CLAIMED returns to UNCLAIMED (override block + "
            "release; the coder gets lease_lost); READY_FOR_REVIEW loses its pending review "
            "claims. Otherwise 409 conflict."
        ),
    ),
    E("task_cancel", "POST", "tasks/{key}/cancel", "api-cancel", "tasks_cancel", result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000)),
        description="Admins: seed 004 cancel = override block + abandon (two events).",
    ),
    E("task_suspend", "POST", "tasks/{key}/suspend", "api-suspend", "tasks_suspend",
        result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000)),
    ),
    E("task_resume", "POST", "tasks/{key}/resume", "api-resume", "tasks_resume", result="task",
        errors=(401, 403, 404, 409),
        params=(KEY,),
    ),
    E("task_human_approve", "POST", "tasks/{key}/approve", "api-approve", "tasks_human_approve",
        result="task",
        params=(KEY, P("note", "string", max_length=2000)),
    ),
    E("task_human_reject", "POST", "tasks/{key}/reject", "api-reject", "tasks_human_reject",
        result="task",
        params=(KEY, P("reason", "string", required=True, max_length=2000)),
    ),
    E("task_set_limits", "PATCH", "tasks/{key}/limits", "api-limits", "tasks_set_limits",
        result="task",
        params=(
            KEY,
            P("priority", "integer", minimum=1, maximum=5),
            P("max_iterations", "integer", minimum=1, maximum=1000, nullable=True),
            P("max_review_cycles", "integer", minimum=1, maximum=1000, nullable=True),
            P("lease_duration_override", "integer", minimum=30, maximum=86400, nullable=True),
            P("needs_human_approval", "boolean"),
        ),
        description="Admins: per-task overrides (null = the project's setting).",
    ),
    E("events_list", "GET", "events", "api-events", "events_list", result="events",
        errors=(400, 401, 403, 404),
        params=(
            P("after", "integer", where="query"),
            P("limit", "integer", where="query"),
            P("task", "string", where="query"),
        ),
    ),
    E("activity_log", "POST", "log", "api-log", "log_append", result="event", status=201,
        errors=(400, 401, 403, 404),
        params=(
            P(
                "action", "string", required=True, max_length=64,
                help="a short word, like a task key",
            ),
            P("detail", "string", required=True, max_length=500),
            P("task", "string", max_length=64),
        ),
        client="log", roles=EVERY_ROLE, cli=("log",),
        help="Append a line to the project's activity log.",
    ),
    E("goal_retrieve", "GET", "goal", "api-goal", "goal_retrieve", result="goal",
        errors=(401, 403, 404),
        client="goal", tool="goal_show", roles=EVERY_ROLE, cli=("goal", "show"),
        help="The project's goal.",
    ),
    E("goal_create", "POST", "goal", "api-goal", "goal_create", result="goal", status=201,
        params=(
            P("description", "string", required=True, max_length=10000),
            P("spec_ref", "string", max_length=500),
        ),
        client="goal_create", roles=PLANNER_ONLY, cli=("goal", "create"),
        help="Set the project's goal.",
    ),
    E("goal_edit", "PATCH", "goal", "api-goal", "goal_edit", result="goal",
        params=(
            P("description", "string", max_length=10000), P("spec_ref", "string", max_length=500),
        ),
        client="goal_edit", roles=PLANNER_ONLY, cli=("goal", "edit"),
        help="Restate the goal IN_PROGRESS (the old statement is kept in its history).",
    ),
    E("goal_complete", "POST", "goal/complete", "api-goal-complete", "goal_complete",
        result="goal",
        params=(P("reason", "string", required=True, max_length=2000, help="why"),),
        client="goal_complete", roles=PLANNER_ONLY, cli=("goal", "complete"),
        help="Mark the goal complete once its work is merged.",
    ),
    E("goal_abort", "POST", "goal/abort", "api-goal-abort", "goal_abort", result="goal",
        params=(P("reason", "string", required=True, max_length=2000),),
        description="Admins: the goal IN_PROGRESS → ABORTED (its open sprint aborted too).",
    ),
    E("sprint_retrieve", "GET", "sprint", "api-sprint", "sprint_retrieve", result="sprint",
        errors=(401, 403, 404),
        client="sprint", tool="sprint_show", roles=EVERY_ROLE, cli=("sprint", "show"),
        help="The current sprint.",
    ),
    E("sprint_create", "POST", "sprint", "api-sprint", "sprint_create", result="sprint",
        status=201,
        params=(
            P("planned", "array", max_items=1000, help="task keys"),
            P("stretch", "array", max_items=1000, help="task keys"),
            P("deadline", "string", nullable=True, help="ISO 8601, in the future"),
        ),
        client="sprint_create", roles=PLANNER_ONLY, cli=("sprint", "create"),
        help="Open (and start) a sprint of the goal with planned and stretch task keys.",
    ),
    E("sprint_checkpoint", "POST", "sprint/checkpoint", "api-sprint-checkpoint",
        "sprint_checkpoint", result="sprint",
        params=(P("reason", "string", required=True, max_length=2000),),
        client="sprint_checkpoint", cli=("sprint", "checkpoint"),
        description="Admins: IN_PROGRESS → CHECKPOINT; agents stop (exit 42) until a decision.",
    ),
    E("sprint_resume", "POST", "sprint/continue", "api-sprint-continue", "sprint_continue",
        result="sprint",
        params=(P("decision", "string", required=True, max_length=2000),),
        client="sprint_continue", cli=("sprint", "continue"),
        description="Admins: CHECKPOINT → IN_PROGRESS; the decision goes into the retrospective.",
    ),
    E("sprint_abort", "POST", "sprint/abort", "api-sprint-abort", "sprint_abort",
        result="sprint",
        params=(P("reason", "string", required=True, max_length=2000),),
        client="sprint_abort", cli=("sprint", "abort"),
    ),
    E("sprint_complete", "POST", "sprint/complete", "api-sprint-complete", "sprint_complete",
        result="sprint", errors=(401, 403, 404, 409),
        client="sprint_complete", roles=PLANNER_ONLY, cli=("sprint", "complete"),
        help="Close the sprint (COMPLETED) once every planned task has ended.",
    ),
    E("sprint_set_deadline", "PUT", "sprint/deadline", "api-sprint-deadline",
        "sprint_set_deadline", result="sprint",
        params=(P("deadline", "string", required=True, nullable=True),),
    ),
    E("project_pause", "POST", "project/pause", "api-project-pause", "project_pause",
        result="project",
        params=(P("reason", "string", required=True, max_length=2000),),
        description="Admins: claims are refused (`paused`), heartbeats answer stop / exit 42.",
    ),
    E("project_resume", "POST", "project/resume", "api-project-resume", "project_resume",
        result="project", errors=(401, 403, 404, 409),
    ),
    E("config_retrieve", "GET", "config", "api-config", "config_retrieve", result="config",
        errors=(401, 403, 404),
    ),
    E("config_update", "PATCH", "config", "api-config", "config_update", result="config",
        params=(
            P("max_coder_iterations", "integer", minimum=1, maximum=1000),
            P("max_review_cycles", "integer", minimum=1, maximum=1000),
            P("heartbeat_interval", "integer", minimum=0, maximum=86400),
            P("lease_duration", "integer", minimum=1, maximum=604800),
            P("coder_poll_interval", "integer", minimum=0, maximum=86400),
            P("coder_max_wait", "integer", minimum=0, maximum=604800),
            P("integration_branch", "string", max_length=200),
            P("escalation_webhook", "string", nullable=True),
            P("webhook_secret", "string", max_length=200, nullable=True),
            P("lease_grace", "integer", minimum=0, maximum=86400),
            P("archive_after_days", "integer", minimum=0, maximum=36500),
            P("watch_interval", "integer", minimum=1, maximum=86400),
            P("review_churn_threshold", "integer", minimum=1, maximum=1000),
            P("retry_backoff", "any"),
            P("state_timeouts", "any"),
            P("wip_limits", "object"),
            P("repo_url", "string", max_length=500),
            P("stall_timeout", "integer", minimum=1, maximum=86400),
            P("max_concurrent", "object"),
            P("max_stalls", "integer", minimum=1, maximum=100),
        ),
        description="Admins: edit the seed 002 config (400 naming a field the rules refuse).",
    ),
    E("notifications_retrieve", "GET", "notifications", "api-notifications",
        "notifications_retrieve", result="notifications", errors=(401, 403, 404),
    ),
    E("notifications_set", "PATCH", "notifications", "api-notifications", "notifications_set",
        result="notifications",
        params=(
            P("user", "string", max_length=150),
            P("events", "array", max_items=6),
            P("email", "boolean"),
            P("digest_minutes", "integer", minimum=0, maximum=1440),
            P("chat_url", "string"),
            P("chat_format", "string", enum=("slack", "discord")),
        ),
        description=(
            "A member's notifications (issue 24): their events, e-mail and digest; admins also "
            "set a member's chat webhook (`user`, `chat_url`, `chat_format`)."
        ),
    ),
    E("inbox_retrieve", "GET", "inbox", "api-inbox", "inbox_retrieve", result="inbox",
        errors=(401, 403, 404),
    ),
    E("alerts_list", "GET", "alerts", "api-alerts", "alerts_list", result="alerts",
        errors=(400, 401, 403, 404),
        params=(
            P("severity", "string", where="query", enum=("critical", "info", "warning")),
            P("state", "string", where="query", enum=("open", "resolved")),
            P("type", "string", where="query", enum=ALERT_TYPES),
        ),
    ),
    E("alert_acknowledge", "POST", "alerts/{alert_id}/acknowledge", "api-alert-acknowledge",
        "alerts_acknowledge", result="alert", errors=(401, 403, 404, 409),
        params=(P("alert_id", "integer", where="path", required=True),),
        description="Admins acknowledge an alert; it stays open until its condition clears.",
    ),
    E("circuit_breaker_retrieve", "GET", "circuit-breaker", "api-circuit-breaker",
        "circuit_breaker_retrieve", result="breaker", errors=(401, 403, 404),
    ),
    E("circuit_breaker_resolve", "POST", "circuit-breaker/resolve",
        "api-circuit-breaker-resolve", "circuit_breaker_resolve", result="breaker",
        params=(P("reason", "string", required=True, max_length=2000),),
        description=(
            "Admins resolve a trip with a written reason (kept in the history); continuing the "
            "sprint stays sprint/resume."
        ),
    ),
    E("discoveries_list", "GET", "discoveries", "api-discoveries", "discoveries_list",
        result="discoverys", errors=(401, 403, 404),
    ),
    E("discovery_create", "POST", "discoveries", "api-discoveries", "discoveries_create",
        result="discovery", status=201,
        params=(
            P("description", "string", required=True, max_length=5000),
            P("severity", "string", required=True, enum=("critical", "high", "medium", "low")),
            P("urgency", "string", enum=("immediate", "deferred")),
            P("during", "string", max_length=64, help="the task it was found during"),
            P("recommendation", "string", max_length=5000),
        ),
        client="discover", roles=EVERY_ROLE, cli=("discover",),
        help="Record a discovery: something found outside the task's scope.",
    ),
    E("discovery_triage", "POST", "discoveries/{disc_id}/triage", "api-discovery-triage",
        "discoveries_triage", result="discovery",
        params=(
            P("disc_id", "string", where="path", required=True),
            P("decision", "string", required=True, enum=("convert", "defer", "reject")),
            P("note", "string", max_length=2000),
            P("task", "object"),
        ),
        description="Members defer or reject a discovery; admins convert it into a DRAFT task.",
    ),
    E("anomalies_list", "GET", "anomalies", "api-anomalies", "anomalies_list",
        result="anomalys", errors=(401, 403, 404),
    ),
    E("anomaly_create", "POST", "anomalies", "api-anomalies", "anomalies_create",
        result="anomaly", status=201,
        params=(
            P("type", "string", required=True, enum=ANOMALY_TYPES),
            P("details", "object", required=True, help="the type's fields"),
            P("task", "string", max_length=64, help="the task key it concerns"),
        ),
        client="anomaly", roles=EVERY_ROLE, cli=("anomaly",),
        help="Record an anomaly (seed 002's types, each with its required detail fields).",
    ),
    E("human_note_create", "POST", "notes", "api-notes", "notes_create", result="note",
        status=201, errors=(400, 401, 403, 404),
        params=(
            P("message", "string", required=True, max_length=5000),
            P("task", "string", max_length=64),
        ),
    ),
    E("runs_list", "GET", "runs", "api-runs", "runs_list", result="runs",
        errors=(400, 401, 403, 404),
        params=(P("agent", "string", where="query"), P("task", "string", where="query")),
        client="runs", cli=("runs",),
        help="The supervisors' runs, newest first (exit code, restart reason, last output).",
    ),
    E("run_start", "POST", "runs", "api-runs", "runs_start", result="run", status=201,
        params=(
            P("task", "string", max_length=100, nullable=True),
            P("restart_reason", "string", max_length=100),
            P("command", "string", max_length=500),
        ),
        client="run_start",
        description="`liza supervise` spawned its agent command (on `task`, or none).",
    ),
    E("run_finish", "POST", "runs/{run_id}/finish", "api-run-finish", "runs_finish",
        result="run",
        params=(
            P("run_id", "integer", where="path", required=True),
            P("exit_code", "integer", required=True, minimum=-255, maximum=255),
            P("stopped_by", "string", max_length=100),
            P("output", "string", max_length=200000),
        ),
        client="run_finish",
        description=(
            "The spawn ended: exit code, whether the supervisor stopped it, the last ~200 lines "
            "of its output (agent keys redacted). Only the run's own agent."
        ),
    ),
    E("run_output_append", "POST", "runs/{run_id}/output", "api-run-output", "runs_output",
        result="run",
        params=(
            P("run_id", "integer", where="path", required=True),
            P("text", "string", required=True, max_length=16000),
        ),
        client="run_output",
        description=(
            "A running run's next output lines, streamed by its supervisor (at most 16,000 "
            "characters a request; agent keys redacted; the run keeps its last ~200 lines). Only "
            "the run's own agent, only while it runs (409 once it ended)."
        ),
    ),
    E("usage_record", "POST", "usage", "api-usage", "usage_record", result="usage",
        params=(
            P("usage", "array", required=True, items="object"),
            P("run", "integer", minimum=1, maximum=4611686018427387904),
        ),
        client="usage_record",
        description=(
            "A run's tokens and cost so far, per model (running totals: a repeated report counts "
            "once); by its supervisor (parsed from the CLI's output) or the agent itself. `run` "
            "defaults to the agent's running run (409 when it has none)."
        ),
    ),
    E("budgets_list", "GET", "budgets", "api-budgets", "budgets_list", result="budget_states",
        errors=(401, 403, 404),
        client="budgets",
    ),
    E("budget_set", "POST", "budgets", "api-budgets", "budgets_set", result="budgets",
        params=(
            P(
                "scope", "string", required=True,
                enum=("project", "goal", "sprint", "agent", "task"),
            ),
            P("subject", "string", max_length=64),
            P("limit_usd", "number", minimum=0, maximum=10000000, nullable=True),
            P("limit_tokens", "integer", minimum=1, maximum=10000000000000, nullable=True),
        ),
        description=(
            "Project admins set, raise or lower a budget (`scope` project, goal, sprint, agent or"
            " task; `subject` its id), or remove it with neither limit; audited. Answers every "
            "budget of the project with its spend."
        ),
    ),
    E("agents_list", "GET", "agents", "api-agents", "agents_list", result="agents",
        errors=(401, 403, 404),
        client="agents",
    ),
    E("agents_create", "POST", "agents", "api-agents", "agents_create", result="agent_created",
        status=201, errors=(400, 401, 403, 404),
        params=(
            P("role", "string", required=True, enum=("planner", "coder", "code_reviewer")),
            P("agent_id", "string", max_length=64),
            P("security_reviewer", "boolean"),
            P("label", "string", max_length=100),
        ),
    ),
    E("agents_register", "POST", "agents/register", "api-register", "agents_register",
        result="agent",
        params=(
            P("agent_id", "string", max_length=64),
            P("role", "string", enum=("planner", "coder", "code_reviewer")),
            P("terminal", "string", max_length=200),
        ),
        client="register", cli=("register",),
        help="Register this key's agent (exit 6 when its id is held by a live session).",
    ),
    E("agent_quota_pause", "POST", "agents/quota", "api-agent-quota", "agents_quota_pause",
        result="agent",
        params=(
            P("until", "string", required=True),
            P("provider", "string", required=True, max_length=64),
            P("message", "string", max_length=300),
        ),
        client="quota_pause",
        description=(
            "`liza supervise` met its provider's quota or rate-limit wall: it spawns nothing "
            "before `until`; the board shows when it resumes, the watcher alerts."
        ),
    ),
    E("agents_retrieve", "GET", "agents/{agent_id}", "api-agent", "agents_retrieve",
        result="agent", errors=(401, 403, 404),
        params=(P("agent_id", "string", where="path", required=True),),
    ),
    E("agent_keys_list", "GET", "agents/{agent_id}/keys", "api-agent-keys", "agent_keys_list",
        result="agent_keys", errors=(401, 403, 404),
        params=(P("agent_id", "string", where="path", required=True),),
    ),
    E("agent_key_issue", "POST", "agents/{agent_id}/keys", "api-agent-keys", "agent_keys_issue",
        result="issued_key", status=201, errors=(400, 401, 403, 404),
        params=(
            P("agent_id", "string", where="path", required=True),
            P("label", "string", max_length=100),
        ),
    ),
    E("agent_disable", "POST", "agents/{agent_id}/disable", "api-agent-disable",
        "agents_disable", result="agent", errors=(401, 403, 404, 409),
        params=(P("agent_id", "string", where="path", required=True),),
        description="Admins: the agent's requests get 403 and what it held is taken back.",
    ),
    E("agent_enable", "POST", "agents/{agent_id}/enable", "api-agent-enable", "agents_enable",
        result="agent", errors=(401, 403, 404, 409),
        params=(P("agent_id", "string", where="path", required=True),),
        description="Admins: a disabled agent may register and work again.",
    ),
    E("agent_set_availability", "POST", "agents/{agent_id}/availability",
        "api-agent-availability", "agents_availability", result="agent",
        params=(
            P("agent_id", "string", where="path", required=True),
            P("state", "string", required=True, enum=("available", "overloaded")),
        ),
        description=(
            "Admins: overloaded (takes no new work) or available (also clears an error state)."
        ),
    ),
    E("agent_key_revoke", "POST", "keys/{prefix}/revoke", "api-key-revoke", "agent_keys_revoke",
        result="key", errors=(401, 403, 404),
        params=(P("prefix", "string", where="path", required=True),),
    ),
)
# fmt: on

BY_NAME: dict[str, Endpoint] = {e.name: e for e in CONTRACT}
BY_CLIENT: dict[str, Endpoint] = {e.client: e for e in CONTRACT if e.client}
