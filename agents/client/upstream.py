"""Upstream Liza's names (../shared/reference/upstream-liza-names.md), so agents and prompts
written for upstream work unchanged: its MCP tools `liza_*` with its parameter names, its
resources `liza://state|tasks|agents`, and (in agents.client.cli) its hyphenated commands.

Each alias is one of our operations (agents.client.operations) under upstream's name: its
arguments are renamed, then the operation runs as ours does, so the server decides as for any
call. `agent_id`, which upstream uses to name the caller, must be the key's own agent: an alias
never acts for another agent. Upstream tools with no counterpart here (worktrees, merges,
analysis: the supervisor's and the watcher's work) are not offered.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.client import wire
from agents.client.errors import LizaError, UsageError
from agents.client.http import Client
from agents.client.operations import BY_NAME, PLANNER, ROLES, Param, operations_for

AGENT_ID = Param("agent_id", "string", help="the calling agent (the key's own)", required=True)
TASK_ID = Param("task_id", "string", help="the task", required=True)


@dataclass(frozen=True)
class Alias:
    name: str  # upstream's tool name
    operation: str  # ours
    params: tuple[Param, ...]
    rename: dict[str, str] = field(default_factory=dict)  # upstream name -> ours
    help: str = ""
    # Fills what upstream does not send (ours needs it): (client, arguments, environment).
    complete: Callable[[Client, dict[str, Any], dict[str, str]], dict[str, Any]] | None = None
    # An answer without the call (client, our arguments, the agent's id), or None.
    already: Callable[[Client, dict[str, Any], str], Any] | None = None

    @property
    def roles(self) -> frozenset[str]:
        return BY_NAME[self.operation].roles

    def input_schema(self) -> dict[str, Any]:
        properties = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type, "description": p.help}
            if p.type == "array":
                prop["items"] = {"type": p.items}
            if p.enum:
                prop["enum"] = list(p.enum)
            properties[p.name] = prop
        return {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def arguments(
        self, client: Client, given: dict[str, Any], me: str, env: dict[str, str]
    ) -> dict[str, Any]:
        """Our operation's arguments from upstream's; refused if `agent_id` is not `me`."""
        caller = given.get("agent_id")
        if caller is not None and caller != me:
            raise LizaError(
                "not_your_agent_id",
                f"agent_id {caller!r} is not this key's agent ({me}); an agent acts only as itself",
                {"agent_id": caller},
                exit=3,
            )
        ours = {
            self.rename.get(k, k): v
            for k, v in given.items()
            if k != "agent_id" and self.rename.get(k, k) is not None
        }
        return self.complete(client, ours, env) if self.complete else ours


def _git(env: dict[str, str], *args: str, where: str = "LIZA_WORKTREE") -> str:
    cwd = env.get(where) or env.get("LIZA_REPO") or "."
    done = subprocess.run(["git", *args], cwd=Path(cwd), capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _tree_clean(client: Client, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    # Upstream has no attestation: it is read from the worktree (`git status --porcelain`).
    return {**args, "tree_clean": _git(env, "status", "--porcelain") == ""}


def _review_commit(client: Client, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    # Upstream's verdict names no commit: the one under review.
    task = client.task(args["key"])
    return {**args, "verdict": str(args["verdict"]).upper(), "review_commit": task["review_commit"]}


def _base_commit(client: Client, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    branch = env.get("LIZA_INTEGRATION_BRANCH") or "integration"
    return {**args, "base_commit": _git(env, "rev-parse", branch, where="LIZA_REPO")}


def _own_claim(client: Client, args: dict[str, Any], me: str) -> Any:
    # The supervisor claims before spawning: a primed agent claiming its assigned task is
    # answered with it, as upstream would (the claim is already its own).
    task = client.task(args["key"])
    if task["status"] == wire.CLAIMED and task.get("assigned_to") == me:
        return task
    return None


def _superseded(client: Client, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    replaced = args.pop("replacement_ids", None) or []
    reason = args["reason"] + (f" (superseded by {', '.join(replaced)})" if replaced else "")
    return {**args, "reason": reason}


ALIASES: tuple[Alias, ...] = (
    Alias(
        "liza_claim_task", "claim", (TASK_ID, AGENT_ID), {"task_id": "key"},
        "Claim a task (here the supervisor claims before spawning: your assigned task is "
        "already yours).", _base_commit, _own_claim,
    ),
    Alias(
        "liza_submit_for_review", "submit",
        (TASK_ID, Param("commit_sha", "string", help="the commit to review", required=True),
         AGENT_ID),
        {"task_id": "key", "commit_sha": "review_commit"},
        "Submit your task for review at a commit (the worktree must be clean).", _tree_clean,
    ),
    Alias(
        "liza_handoff", "handoff",
        (TASK_ID, AGENT_ID, Param("summary", "string", required=True),
         Param("next_action", "string", required=True)),
        {"task_id": "key"}, "Hand your task over to the next session.",
    ),
    Alias(
        "liza_mark_blocked", "block",
        (TASK_ID, AGENT_ID, Param("reason", "string", required=True),
         Param("questions", "array", help="questions a human must answer", required=True)),
        {"task_id": "key"}, "Block your task with questions.",
    ),
    Alias(
        "liza_submit_verdict", "verdict",
        (TASK_ID, Param("verdict", "string", help="APPROVED or REJECTED", required=True), AGENT_ID,
         Param("reason", "string", help="required to reject")),
        {"task_id": "key"}, "Approve or reject the task under review.", _review_commit,
    ),
    Alias(
        "liza_add_task", "task_create",
        (Param("id", "string", help="the new task's key", required=True),
         Param("desc", "string", required=True),
         Param("spec", "string", help="the spec it implements", required=True),
         Param("done", "string", help="how a reviewer knows it is done", required=True),
         Param("scope", "string", required=True), Param("priority", "integer"),
         Param("depends", "array", help="task keys"),
         Param("type", "string", help="(ignored here)"),
         Param("agent_id", "string", help="the calling agent (the key's own)")),
        {"id": "key", "desc": "description", "spec": "spec_ref", "done": "done_when",
         "depends": "depends_on", "type": None},
        "Create a DRAFT task.",
    ),
    Alias(
        "liza_supersede_task", "task_abandon",
        (TASK_ID, AGENT_ID, Param("reason", "string", required=True),
         Param("replacement_ids", "array", help="the tasks replacing it")),
        {"task_id": "key"}, "Abandon a task superseded by others.", _superseded,
    ),
)  # fmt: skip
BY_ALIAS = {a.name: a for a in ALIASES}

# Upstream's hyphenated commands: `liza <alias>` runs our subcommand (agents.client.cli).
CLI_ALIASES: dict[str, tuple[str, ...]] = {
    "claim-task": ("claim",),
    "submit-for-review": ("submit",),
    "submit-verdict": ("review", "verdict"),
    "mark-blocked": ("block",),
}


def aliases_for(role: str) -> tuple[Alias, ...]:
    return tuple(a for a in ALIASES if role in a.roles)


# -- resources --------------------------------------------------------------------------------

RESOURCES = {
    "liza://state": "the goal, the sprint and the tasks this role sees",
    "liza://tasks": "the tasks this role sees",
    "liza://agents": "the project's agents: id, role, status, task",
}


def visible_tasks(client: Client, role: str) -> list[dict[str, Any]]:
    """Role-filtered: DRAFT tasks are the planner's alone (not yet work for anyone else)."""
    tasks = client.tasks()
    if role == PLANNER:
        return tasks
    return [t for t in tasks if t["status"] != wire.DRAFT]


def read(client: Client, role: str, uri: str) -> Any:
    if uri == "liza://tasks":
        return visible_tasks(client, role)
    if uri == "liza://agents":
        fields = ("agent_id", "role", "status", "current_task")
        return [{k: a.get(k) for k in fields} for a in client.agents()]
    if uri == "liza://state":
        state: dict[str, Any] = {"role": role, "tasks": visible_tasks(client, role)}
        for name, getter in (("goal", client.goal), ("sprint", client.sprint)):
            try:
                state[name] = getter()
            except LizaError:
                state[name] = None
        return state
    raise UsageError(f"no resource {uri}; one of {', '.join(RESOURCES)}")


def tools_help() -> str:
    """`liza mcp --help`: the tools of each role, ours then upstream's names."""
    lines = ["\b", "Tools by role (the key decides the role):"]
    for role in ROLES:
        ours = ", ".join(op.name for op in operations_for(role))
        upstream = ", ".join(a.name for a in aliases_for(role))
        lines += [f"  {role}: {ours}", f"    upstream names: {upstream}"]
    lines.append("Resources (read-only, filtered by role): " + ", ".join(RESOURCES))
    return "\n".join(lines)
