"""The validator's vocabulary: a `Violation`, every rule's wording in report order (`INVARIANTS`,
seed 002's where the seed words it; `ORIGINAL_RULES`, those liza-validate.sh v0.1.1 checks too),
the file's own clock (`reference_time`), and the small readers that never raise on a malformed
value. The checks themselves are `task_checks.py` (tasks, agents) and `validation.py` (the other
sections and `validate_state`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from boards.protocol import (
    ACTIVE_CODER_STATES,
    AGENT_STATES,
    ANOMALY_TYPES,
    GOAL_STATES,
    LEASE_GRACE_SECONDS,
    MAX_BLOCKED_QUESTIONS,
    SPRINT_STATES,
    TASK_STATES,
    TaskStatus,
    format_timestamp,
    parse_timestamp,
)


@dataclass(frozen=True)
class Violation:
    rule: str  # a stable short code, a key of INVARIANTS
    subject: str  # what it names: "task-7", "agent coder-1", "anomaly #2", "state"
    message: str  # the seed's wording of the rule (INVARIANTS[rule])
    detail: str = ""  # what exactly is wrong here, e.g. "missing: error_pattern"

    @property
    def original(self) -> bool:
        """Whether the original liza-validate.sh rejects this too."""
        return self.rule in ORIGINAL_RULES

    def __str__(self) -> str:
        text = f"{self.subject}: {self.message}"
        return f"{text} ({self.detail})" if self.detail else text


def _one_of(values: Iterable[str]) -> str:
    return ", ".join(values)


# Rule code -> wording, in report order: sections in state.yaml file order, then the rules of each
# section. Where a seed words the rule, the wording is the seed's (seed 002 "Validation Rules"
# invariants, which repeat seed 000's); the other rules come from the seeds' schemas and tables.
INVARIANTS: dict[str, str] = {
    # Seed 002 "Validation Rules" required_fields.state.
    "required_fields": "state.yaml must have version, goal, tasks, agents, config and sprint",
    # Seed 002 "state.yaml Schema": tasks and anomalies are lists, agents a mapping by agent id.
    "section_shape": "Section must have the shape of seed 002's state.yaml schema",
    "entry_shape": "Each task, agent and anomaly must be a mapping of fields",
    # Seed 000 "Goal State Machine".
    "goal_status_valid": f"Goal status must be one of: {_one_of(GOAL_STATES)}",
    # Tasks are found by id: depends_on, superseded_by, sprint scope and agents all use it.
    "task_id_missing": "Every task must have an id",
    "task_id_unique": "Task ids must be unique",
    # Seed 000 "Validation Rules" task_states.valid.
    "task_status_valid": f"Task status must be one of: {_one_of(TASK_STATES)}",
    "draft_no_assignee": "DRAFT task cannot have assigned_to",
    "done_when_required": "Non-DRAFT task (except SUPERSEDED, ABANDONED) must have done_when",
    "spec_ref_required": "Non-DRAFT task (except SUPERSEDED, ABANDONED) must have spec_ref",
    "claimed_assigned_to": "CLAIMED task must have assigned_to",
    "claimed_worktree": "CLAIMED task must have worktree",
    "claimed_lease_missing": "CLAIMED task must have lease_expires",
    # Ours beyond the original, which checks only that the lease is there.
    "claimed_lease_expires": "CLAIMED task must have valid lease_expires",
    "claimed_base_commit": (
        "CLAIMED task must have base_commit "
        "(except integration_fix tasks which reuse existing worktree)"
    ),
    "ready_for_review_commit": "READY_FOR_REVIEW task must have review_commit",
    "rejected_reason": "REJECTED task must have rejection_reason",
    "blocked_diagnosis": "BLOCKED task must have blocked_reason and blocked_questions",
    # SPEC §4 blocked_questions[1..3]; seed 002 "Mark blocked" asks for a short diagnosis.
    "blocked_questions_max": (
        f"BLOCKED task must have at most {MAX_BLOCKED_QUESTIONS} blocked_questions"
    ),
    "superseded_fields": "SUPERSEDED task must have superseded_by and rescope_reason",
    "merged_no_worktree": "MERGED task must not have worktree",
    # Ours: import is an admin operation on any file; a worktree names a directory of the
    # project (the original resolves it under the project root), never one outside it.
    "worktree_inside_project": "Task worktree must be a relative path inside the project",
    "depends_on_exists": "depends_on must reference existing task IDs",
    "depends_on_acyclic": "depends_on must not create circular dependencies",
    "claimed_depends_merged": "CLAIMED task must have all depends_on tasks in MERGED status",
    "integration_fix_history": (
        "Task with integration_fix:true must have prior INTEGRATION_FAILED in history"
    ),
    "failed_by_unique": "Task failed_by list must contain unique agent IDs",
    # Seed 000 "Validation Rules" agent_states.
    "agent_status_valid": f"Agent status must be one of: {_one_of(AGENT_STATES)}",
    # SPEC §4 Agent: ids planner-N, coder-N, code-reviewer-N, the prefix matching the role.
    "agent_id_role": "Agent id must be planner-N, coder-N or code-reviewer-N, matching its role",
    "working_has_task": "Agent WORKING must have task",
    "working_lease_missing": "Agent WORKING must have lease_expires",
    # Ours: the original only warns about an expired lease.
    "working_lease": (
        "Agent WORKING must have lease_expires in future "
        f"(or within grace period of {LEASE_GRACE_SECONDS}s)"
    ),
    # "No two agents assigned to same task", read from the agents' side...
    "agent_task_unique": "No two agents assigned to same task",
    # ...and from the tasks' side: a coder holds one task at a time (seed 000 agent machine,
    # SPEC §5.1), so one agent id on two active tasks is the same double assignment.
    "coder_single_active_task": (
        "No two agents assigned to same task: an agent may hold at most one "
        f"{'/'.join(s for s in TASK_STATES if s in ACTIVE_CODER_STATES)} task"
    ),
    # Seed 002 "Handoff Fields": summary and next_action are required.
    "handoff_fields": "Handoff entry must have summary and next_action",
    "discovery_urgency": "Discovered item urgency must be 'deferred' or 'immediate'",
    "anomaly_type": f"Anomaly type must be one of: {_one_of(ANOMALY_TYPES)}",
    # Seed 002 "Required Details Fields (validated by liza-validate.sh)".
    "anomaly_details": "Anomaly details must contain the required fields for its type",
    # Seed 000 "Sprint State Machine".
    "sprint_status_valid": f"Sprint status must be one of: {_one_of(SPRINT_STATES)}",
    "sprint_scope_exists": "Sprint scope planned and stretch must reference existing task IDs",
    "sprint_goal_ref": "sprint.goal_ref must equal goal.id",
    "sprint_started": "sprint.timeline.started is required",
}


# The rules liza-validate.sh v0.1.1 checks as well (its checks, one by one, in
# original-liza.md §2.10); the others are ours. "Agent WORKING with an expired lease" is only a
# WARNING there.
ORIGINAL_RULES: frozenset[str] = frozenset(
    {
        "required_fields",
        "task_status_valid",
        "draft_no_assignee",
        "done_when_required",
        "spec_ref_required",
        "claimed_assigned_to",
        "claimed_worktree",
        "claimed_lease_missing",
        "claimed_base_commit",
        "ready_for_review_commit",
        "rejected_reason",
        "blocked_diagnosis",
        "superseded_fields",
        "merged_no_worktree",
        "depends_on_exists",
        "depends_on_acyclic",
        "claimed_depends_merged",
        "integration_fix_history",
        "failed_by_unique",
        "working_has_task",
        "working_lease_missing",
        "coder_single_active_task",
        "handoff_fields",
        "discovery_urgency",
        "anomaly_type",
        "anomaly_details",
        "sprint_status_valid",
        "sprint_scope_exists",
        "sprint_goal_ref",
        "sprint_started",
    }
)


# What a live project lacks before it can be written for the original (SPEC §13): reported as
# "not exportable yet" for a project, INVALID for a file.
NOT_YET_EXPORTABLE: dict[str, str] = {
    "goal": "the project has no goal yet",
    "sprint": "the project has no sprint yet",
}


_RULE_ORDER: dict[str, int] = {rule: index for index, rule in enumerate(INVARIANTS)}


_REQUIRED_TOP_LEVEL: tuple[str, ...] = ("version", "goal", "tasks", "agents", "config", "sprint")


_LEASE_GRACE = timedelta(seconds=LEASE_GRACE_SECONDS)


# Seed 002: done_when and spec_ref are owed by every task the planner has finalized, except
# the two terminal states a task can reach without ever being worked on.
_DEFINITION_EXEMPT: frozenset[str] = frozenset(
    {TaskStatus.DRAFT, TaskStatus.SUPERSEDED, TaskStatus.ABANDONED}
)


# Seed 002 invariants "<STATUS> task must have <fields>", one rule code each.
_FIELDS_REQUIRED_BY_STATUS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    TaskStatus.CLAIMED: (
        ("claimed_assigned_to", ("assigned_to",)),
        ("claimed_worktree", ("worktree",)),
    ),
    TaskStatus.READY_FOR_REVIEW: (("ready_for_review_commit", ("review_commit",)),),
    TaskStatus.REJECTED: (("rejected_reason", ("rejection_reason",)),),
    TaskStatus.BLOCKED: (("blocked_diagnosis", ("blocked_reason", "blocked_questions")),),
    TaskStatus.SUPERSEDED: (("superseded_fields", ("superseded_by", "rescope_reason")),),
}


def _violation(rule: str, subject: str, detail: str = "") -> Violation:
    return Violation(rule=rule, subject=subject, message=INVARIANTS[rule], detail=detail)


def _misshapen(raw: Any, section: str, shape: type) -> list[Violation]:
    """`section_shape` for a section (or part of one) that is there but not of its seed 002
    shape, a mapping or a list; an absent one is another rule's (required_fields) or allowed."""
    if raw is None or isinstance(raw, shape):
        return []
    detail = f"{section} is {type(raw).__name__}, not {'a list' if shape is list else 'a mapping'}"
    return [_violation("section_shape", section, detail)]


def _entries(
    entries: Iterable[tuple[str, Any]],
) -> tuple[list[tuple[str, Mapping[str, Any]]], list[Violation]]:
    """A section's entries, each with its subject: those that are mappings of fields, and an
    `entry_shape` violation for each other one (its rules cannot be judged)."""
    fields: list[tuple[str, Mapping[str, Any]]] = []
    misshapen: list[Violation] = []
    for subject, entry in entries:
        if isinstance(entry, Mapping):
            fields.append((subject, entry))
        else:
            detail = f"{type(entry).__name__}, not a mapping"
            misshapen.append(_violation("entry_shape", subject, detail))
    return fields, misshapen


def _present(value: Any) -> bool:
    """Seed 002 "must have": a value that is not null, not "" and not an empty list."""
    return value is not None and not (isinstance(value, str | list) and len(value) == 0)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _key(value: Any) -> str | None:
    """An identifier as text (YAML turns `id: 7` into an int); None when absent or not scalar."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value)
    return text or None


def _parse(value: Any) -> datetime | None:
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError, OverflowError):
        return None


def _status(entry: Mapping[str, Any], known: Iterable[str]) -> str | None:
    """The entry's status when it is one of `known`, else None (reported by the caller)."""
    value = entry.get("status")
    return value if isinstance(value, str) and value in known else None


def _lease_problem(value: Any, now: datetime) -> str | None:
    """Why a lease that is there is not valid at `now` (grace included), or None when it is.

    Seed 000/002: "in future (or within grace period of 60s)"; seed 002 "Lease Model" gives the
    watcher the same 60 s grace before a lease counts as lost.
    """
    expires = _parse(value)
    if expires is None:
        return f"lease_expires {value!r} is not an ISO 8601 timestamp"
    if expires < now - _LEASE_GRACE:
        return (
            f"lease_expires {format_timestamp(expires)} is more than {LEASE_GRACE_SECONDS}s "
            f"before {format_timestamp(now)}"
        )
    return None


def worktree_problem(value: Any) -> str | None:
    """Why `value` cannot be a task's worktree, or None: a relative path (POSIX, like the
    original's `.worktrees/<task>`) that stays inside the project. Empty is no worktree."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        return f"expected a path as text, found {type(value).__name__}"
    if "\0" in value or "\\" in value:
        return f"{value!r} holds a NUL or a backslash"
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        return f"{value!r} is absolute; it must be relative to the project, like .worktrees/<task>"
    if ".." in path.parts:
        return f"{value!r} leaves the project ('..'); it must stay inside it"
    return None


def reference_time(state: Mapping[str, Any]) -> datetime:
    """The moment a state file is judged at: its latest agent heartbeat.

    A state file is a snapshot; judging its leases against the wall clock would call every
    archived file invalid. The latest heartbeat is the last moment an agent is known to have
    written the blackboard. Without one, the real current UTC time.
    """
    agents = state.get("agents") if isinstance(state, Mapping) else None
    heartbeats: list[datetime] = []
    if isinstance(agents, Mapping):
        for agent in agents.values():
            if isinstance(agent, Mapping):
                beat = _parse(agent.get("heartbeat"))
                if beat is not None:
                    heartbeats.append(beat)
    return max(heartbeats) if heartbeats else datetime.now(UTC)
