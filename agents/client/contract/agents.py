"""The agents: liveness (is there work, heartbeat), the supervisors' runs and usage reports,
agents, their registration and their keys.
"""

from __future__ import annotations

from agents.client.contract.base import AGENT_ID, EVERY_ROLE, RUN_ID, E, Endpoint, P

# One entry a row, its fields packed: `ruff format` would put each field on a line of its
# own (the table twice as long, no longer read as rows); so not formatted, here only.
# fmt: off
LIVENESS: tuple[Endpoint, ...] = (
    E("work_for_role", "GET", "work", "api-work", "work_for_role", result="work",
        errors=(400, 401, 403, 404, 409),
        params=(
            P(
                "role", "string", where="query", enum=("code_reviewer", "coder", "planner"),
                tool=False,
            ),
        ),
        client="work", roles=EVERY_ROLE, cli=("work",),
        help=(
            "Is there work for this role now? `exit` 0: the role is complete; `retry_after`: ask "
            "again then. After `leave`: 409 not_registered (exit 8), the session is over."
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
            "comes back as an error with stop=true: end the session. After `leave`: 409 "
            "not_registered (exit 8), the session is over; nothing restarts it."
        ),
    ),
)

AGENTS: tuple[Endpoint, ...] = (
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
            RUN_ID,
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
        params=(RUN_ID, P("text", "string", required=True, max_length=16000)),
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
    E("agent_leave", "POST", "agents/leave", "api-agent-leave", "agents_leave", result="agent",
        client="leave", cli=("leave",),
        help=(
            "End this agent's session: its id is free to register again at once, not when its "
            "lease lapses (409 while it holds a live task or review claim: hand off or give "
            "back first). Its heartbeats are then refused (not_registered, exit 8) until it "
            "registers again."
        ),
    ),
    E("agent_quota_pause", "POST", "agents/quota", "api-agent-quota", "agents_quota_pause",
        result="agent",
        params=(
            P(
                "until", "string", required=True, format="date-time",
                help="no spawn before this time (at most 7 days)",
            ),
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
        params=(AGENT_ID,),
    ),
    E("agent_keys_list", "GET", "agents/{agent_id}/keys", "api-agent-keys", "agent_keys_list",
        result="agent_keys", errors=(401, 403, 404),
        params=(AGENT_ID,),
    ),
    E("agent_key_issue", "POST", "agents/{agent_id}/keys", "api-agent-keys", "agent_keys_issue",
        result="issued_key", status=201,
        params=(AGENT_ID, P("label", "string", max_length=100)),
    ),
    E("agent_disable", "POST", "agents/{agent_id}/disable", "api-agent-disable",
        "agents_disable", result="agent",
        params=(AGENT_ID,),
        description="Admins: the agent's requests get 403 and what it held is taken back.",
    ),
    E("agent_enable", "POST", "agents/{agent_id}/enable", "api-agent-enable", "agents_enable",
        result="agent",
        params=(AGENT_ID,),
        description="Admins: a disabled agent may register and work again.",
    ),
    E("agent_set_availability", "POST", "agents/{agent_id}/availability",
        "api-agent-availability", "agents_availability", result="agent",
        params=(AGENT_ID, P("state", "string", required=True, enum=("available", "overloaded"))),
        description=(
            "Admins: overloaded (takes no new work) or available (also clears an error state)."
        ),
    ),
    E("agent_key_revoke", "POST", "keys/{prefix}/revoke", "api-key-revoke", "agent_keys_revoke",
        result="key",
        params=(P("prefix", "string", where="path", required=True),),
    ),
)
# fmt: on
