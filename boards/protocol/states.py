"""The state machines (seed 000): task, agent, goal and sprint states, their edges and the
forbidden ones, agent roles and ids. The one module that spells state names out.
"""

from __future__ import annotations

import re
from enum import StrEnum


class TaskStatus(StrEnum):
    """Seed 000 "Task State Machine", in the order of seed 000's "Validation Rules"."""

    DRAFT = "DRAFT"
    UNCLAIMED = "UNCLAIMED"
    CLAIMED = "CLAIMED"
    READY_FOR_REVIEW = "READY_FOR_REVIEW"
    REJECTED = "REJECTED"
    APPROVED = "APPROVED"
    MERGED = "MERGED"
    BLOCKED = "BLOCKED"
    ABANDONED = "ABANDONED"
    SUPERSEDED = "SUPERSEDED"
    INTEGRATION_FAILED = "INTEGRATION_FAILED"


TASK_STATES: tuple[str, ...] = tuple(s.value for s in TaskStatus)
TERMINAL_TASK_STATES: frozenset[str] = frozenset({"MERGED", "ABANDONED", "SUPERSEDED"})
NON_TERMINAL_TASK_STATES: tuple[str, ...] = tuple(
    s for s in TASK_STATES if s not in TERMINAL_TASK_STATES
)
# A coder "holds" a task in these states (one at a time: SPEC §5.1, seed 000 agent machine).
ACTIVE_CODER_STATES: frozenset[str] = frozenset({"CLAIMED", "READY_FOR_REVIEW", "REJECTED"})

# The 13 edges of seed 000 "Task State Machine", each with the name of the model transition.
TASK_EDGES: dict[tuple[str, str], str] = {
    ("DRAFT", "UNCLAIMED"): "finalize",
    ("UNCLAIMED", "CLAIMED"): "claim",
    ("CLAIMED", "READY_FOR_REVIEW"): "submit_for_review",
    ("CLAIMED", "BLOCKED"): "block",
    ("READY_FOR_REVIEW", "APPROVED"): "approve",
    ("READY_FOR_REVIEW", "REJECTED"): "reject",
    ("REJECTED", "CLAIMED"): "reclaim",
    ("APPROVED", "MERGED"): "merge",
    ("APPROVED", "INTEGRATION_FAILED"): "fail_integration",
    ("BLOCKED", "UNCLAIMED"): "release",
    ("BLOCKED", "SUPERSEDED"): "supersede",
    ("BLOCKED", "ABANDONED"): "abandon",
    ("INTEGRATION_FAILED", "CLAIMED"): "claim_integration_fix",
}
# SPEC §5.1 "Override block": humans and the system (never agents) may block any non-terminal
# task. From CLAIMED it is a different edge from the coder's own `block` (no failed_by entry).
OVERRIDE_BLOCK_SOURCES: tuple[str, ...] = tuple(
    s for s in NON_TERMINAL_TASK_STATES if s not in ("BLOCKED",)
)
# Seed 000 "Forbidden Transitions", named so that their refusal can be tested by name.
FORBIDDEN_TASK_EDGES: tuple[tuple[str, str], ...] = (
    ("DRAFT", "CLAIMED"),
    ("CLAIMED", "MERGED"),
    ("CLAIMED", "APPROVED"),
    ("REJECTED", "APPROVED"),
    *((t, s) for t in sorted(TERMINAL_TASK_STATES) for s in TASK_STATES),
)


def task_targets(from_status: str) -> list[str]:
    """States reachable from `from_status` by a seed 000 edge (what an error lists as allowed)."""
    return [to for (frm, to) in TASK_EDGES if frm == from_status]


class AgentStatus(StrEnum):
    """Seed 000 "Agent State Machine"."""

    STARTING = "STARTING"
    IDLE = "IDLE"
    WORKING = "WORKING"
    REVIEWING = "REVIEWING"
    WAITING = "WAITING"
    HANDOFF = "HANDOFF"


AGENT_STATES: tuple[str, ...] = tuple(s.value for s in AgentStatus)
# Seed 000 "Agent State Machine"; role None = every role, otherwise the only role allowed.
AGENT_EDGES: dict[tuple[str, str], tuple[str, str | None]] = {
    ("STARTING", "IDLE"): ("ready", None),
    ("IDLE", "WORKING"): ("start_work", "coder"),
    ("IDLE", "REVIEWING"): ("start_review", "code_reviewer"),
    ("WORKING", "WAITING"): ("wait_for_review", "coder"),
    ("WORKING", "IDLE"): ("stop_work", "coder"),
    ("WORKING", "HANDOFF"): ("hand_off", "coder"),
    ("REVIEWING", "IDLE"): ("finish_review", "code_reviewer"),
    ("REVIEWING", "HANDOFF"): ("hand_off", "code_reviewer"),
    ("WAITING", "WORKING"): ("resume_work", "coder"),
    ("WAITING", "IDLE"): ("stop_work", "coder"),
}
# "HANDOFF → (agent terminates, supervisor restarts fresh)": re-registering the same id starts
# the machine again at STARTING. Like the override block, this is the only edge beyond the table,
# and only registration (never a task operation) takes it.
AGENT_RESTART_SOURCES: tuple[str, ...] = AGENT_STATES

AGENT_ROLES: tuple[str, ...] = ("planner", "coder", "code_reviewer")
AGENT_ID_PREFIX: dict[str, str] = {
    "planner": "planner",
    "coder": "coder",
    "code_reviewer": "code-reviewer",
}
AGENT_ID_RE = re.compile(r"^(planner|coder|code-reviewer)-([1-9][0-9]*)$")


def agent_id_matches_role(agent_id: str, role: str) -> bool:
    match = AGENT_ID_RE.match(agent_id or "")
    return bool(match) and AGENT_ID_PREFIX.get(role) == match.group(1)


class GoalStatus(StrEnum):
    """Seed 000 "Goal State Machine" (no CHECKPOINT: that is a sprint concern)."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


class SprintStatus(StrEnum):
    """Seed 000 "Sprint State Machine"."""

    IN_PROGRESS = "IN_PROGRESS"
    CHECKPOINT = "CHECKPOINT"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


GOAL_STATES: tuple[str, ...] = tuple(s.value for s in GoalStatus)
GOAL_EDGES: dict[tuple[str, str], str] = {
    ("IN_PROGRESS", "COMPLETED"): "complete",
    ("IN_PROGRESS", "ABORTED"): "abort",
}
SPRINT_STATES: tuple[str, ...] = tuple(s.value for s in SprintStatus)
SPRINT_EDGES: dict[tuple[str, str], str] = {
    ("IN_PROGRESS", "CHECKPOINT"): "checkpoint",
    ("IN_PROGRESS", "COMPLETED"): "complete",
    ("IN_PROGRESS", "ABORTED"): "abort",
    ("CHECKPOINT", "IN_PROGRESS"): "resume",
    ("CHECKPOINT", "ABORTED"): "abort",
}
TERMINAL_SPRINT_STATES: frozenset[str] = frozenset({"COMPLETED", "ABORTED"})
OPEN_SPRINT_STATES: tuple[str, ...] = ("IN_PROGRESS", "CHECKPOINT")
TERMINAL_GOAL_STATES: frozenset[str] = frozenset({"COMPLETED", "ABORTED"})


def goal_targets(from_status: str) -> list[str]:
    return [to for (frm, to) in GOAL_EDGES if frm == from_status]


def sprint_targets(from_status: str) -> list[str]:
    return [to for (frm, to) in SPRINT_EDGES if frm == from_status]


# Seed 002's sprint.metrics "tasks_in_progress": work that a coder or reviewer holds or that
# waits for its next step (REJECTED waits for its coder, APPROVED for its merge).
IN_PROGRESS_TASK_STATES: tuple[str, ...] = (
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "INTEGRATION_FAILED",
)
