"""The one validator of a Liza blackboard: every invariant of seeds 000 and 002 "Validation Rules".

`validate_state` is a pure function over a state dict shaped like seed 002's `state.yaml` after
`yaml.safe_load` (timestamps may be `datetime` objects or ISO strings). It imports no Django
models: `liza_validate` runs it on files as well as on exported projects, and the services may
run it on the state they are about to commit (SPEC §5.1, §8).

Malformed input never raises: a section or entry of the wrong shape is itself a violation, and
the rules that cannot be judged on it are skipped.

Every check of the original `liza-validate.sh` v0.1.1 is here (ORIGINAL_RULES names them; an
export breaking one of them is refused, SPEC §13), plus rules the original lacks.

Not checked, on purpose:
- "CLAIMED task worktree path must exist" (seed 002): paths live on agent machines (SPEC §5.1);
  a worktree must however be a relative path that stays inside the project.
- The original's spec_ref file check: the spec files are not part of the blackboard.
- The "Transition invariants" of seed 002: the seed itself says they need history analysis and
  are enforced at runtime, by the services here.
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
    ANOMALY_REQUIRED_FIELDS,
    ANOMALY_TYPES,
    GOAL_STATES,
    LEASE_GRACE_SECONDS,
    MAX_BLOCKED_QUESTIONS,
    SPRINT_STATES,
    TASK_STATES,
    AgentStatus,
    TaskStatus,
    agent_id_matches_role,
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


# --- small readers that never raise ----------------------------------------------------------


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


# --- the clock --------------------------------------------------------------------------------


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


# --- tasks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    position: int  # 1-based place in the tasks list
    subject: str  # its id, or "task #N" when it has none
    id: str | None
    data: Mapping[str, Any]
    status: str | None  # None when missing or not a seed 000 state


@dataclass
class _Tasks:
    tasks: list[_Task]
    by_id: dict[str, _Task]  # first task with each id
    readable: bool  # False when the tasks section is not a list: references cannot be judged
    shape: list[Violation]


def _read_tasks(raw: Any) -> _Tasks:
    if raw is None:  # required_fields reports it
        return _Tasks([], {}, False, [])
    if not isinstance(raw, list):
        detail = f"tasks is {type(raw).__name__}, not a list"
        return _Tasks([], {}, False, [_violation("section_shape", "tasks", detail)])
    tasks: list[_Task] = []
    by_id: dict[str, _Task] = {}
    shape: list[Violation] = []
    for position, entry in enumerate(raw, start=1):
        if not isinstance(entry, Mapping):
            detail = f"{type(entry).__name__}, not a mapping"
            shape.append(_violation("entry_shape", f"task #{position}", detail))
            continue
        task_id = _key(entry.get("id"))
        task = _Task(
            position=position,
            subject=task_id or f"task #{position}",
            id=task_id,
            data=entry,
            status=_status(entry, TASK_STATES),
        )
        tasks.append(task)
        if task_id is not None:
            by_id.setdefault(task_id, task)
    return _Tasks(tasks, by_id, True, shape)


def _check_task_identity(index: _Tasks) -> list[Violation]:
    found: list[Violation] = []
    for task in index.tasks:
        if task.id is None:
            found.append(_violation("task_id_missing", task.subject, f"id {task.data.get('id')!r}"))
        elif index.by_id[task.id] is not task:
            first = index.by_id[task.id].position
            found.append(_violation("task_id_unique", task.subject, f"also task #{first}"))
        if task.status is None:
            detail = f"status {task.data.get('status')!r}"
            found.append(_violation("task_status_valid", task.subject, detail))
    return found


def _check_task_fields(task: _Task) -> list[Violation]:
    """The seed 002 invariants on which fields a task of its status must (not) have."""
    data, status, subject = task.data, task.status, task.subject
    found: list[Violation] = []
    if status is None:  # already reported; nothing else can be judged on an unknown status
        return found
    # "Cannot have" is judged as the original does (`!= null`): even an empty value is had.
    if status == TaskStatus.DRAFT and data.get("assigned_to") is not None:
        detail = f"assigned_to {data['assigned_to']!r}"
        found.append(_violation("draft_no_assignee", subject, detail))
    if status not in _DEFINITION_EXEMPT:
        for rule, name in (("done_when_required", "done_when"), ("spec_ref_required", "spec_ref")):
            if not _present(data.get(name)):
                found.append(_violation(rule, subject, f"{name} is missing"))
    for rule, names in _FIELDS_REQUIRED_BY_STATUS.get(status, ()):
        missing = [name for name in names if not _present(data.get(name))]
        if missing:
            found.append(_violation(rule, subject, f"missing: {', '.join(missing)}"))
    questions = data.get("blocked_questions")
    too_many = isinstance(questions, list) and len(questions) > MAX_BLOCKED_QUESTIONS
    if status == TaskStatus.BLOCKED and too_many:
        detail = f"{len(questions)} given"
        found.append(_violation("blocked_questions_max", subject, detail))
    if status == TaskStatus.MERGED and data.get("worktree") is not None:
        found.append(_violation("merged_no_worktree", subject, f"worktree {data['worktree']!r}"))
    if _present(data.get("worktree")) and (problem := worktree_problem(data["worktree"])):
        found.append(_violation("worktree_inside_project", subject, problem))
    return found


def _check_claim(task: _Task, now: datetime) -> list[Violation]:
    """What a CLAIMED task owes beyond its fields: a live lease and a base commit."""
    if task.status != TaskStatus.CLAIMED:
        return []
    found: list[Violation] = []
    lease = task.data.get("lease_expires")
    problem = _lease_problem(lease, now) if _present(lease) else None
    if not _present(lease):
        found.append(_violation("claimed_lease_missing", task.subject, "lease_expires is missing"))
    elif problem:
        found.append(_violation("claimed_lease_expires", task.subject, problem))
    # An integration fix reuses the failed worktree (seed 000 "Transition Requirements"), so
    # its base is that worktree's, not a fresh integration HEAD.
    if task.data.get("integration_fix") is not True and not _present(task.data.get("base_commit")):
        found.append(_violation("claimed_base_commit", task.subject, "base_commit is missing"))
    return found


def _has_integration_failure(history: Any) -> bool:
    """Whether a history entry records the integration failure: `event: integration_failed`,
    exactly what the original validator looks for (and what the services write)."""
    return any(
        isinstance(entry, Mapping) and entry.get("event") == "integration_failed"
        for entry in _as_list(history)
    )


def _check_task_history(task: _Task) -> list[Violation]:
    found: list[Violation] = []
    data = task.data
    if data.get("integration_fix") is True and not _has_integration_failure(data.get("history")):
        found.append(
            _violation("integration_fix_history", task.subject, "no integration_failed entry")
        )
    seen: set[str] = set()
    duplicates: list[str] = []
    for entry in _as_list(data.get("failed_by")):
        agent_id = _key(entry) or repr(entry)
        if agent_id in seen and agent_id not in duplicates:
            duplicates.append(agent_id)
        seen.add(agent_id)
    if duplicates:
        detail = f"repeated: {', '.join(duplicates)}"
        found.append(_violation("failed_by_unique", task.subject, detail))
    return found


def _dependencies(task: _Task) -> tuple[list[str], list[str]]:
    """The task's depends_on split into ids and the entries that are not ids at all."""
    ids: list[str] = []
    malformed: list[str] = []
    for entry in _as_list(task.data.get("depends_on")):
        key = _key(entry)
        if key is None:
            malformed.append(repr(entry))
        elif key not in ids:
            ids.append(key)
    return ids, malformed


def _check_dependencies(index: _Tasks) -> list[Violation]:
    found: list[Violation] = []
    edges: dict[str, list[str]] = {}
    for task in index.tasks:
        ids, malformed = _dependencies(task)
        unknown = [dep for dep in ids if dep not in index.by_id] + malformed
        if unknown:
            found.append(
                _violation("depends_on_exists", task.subject, f"unknown: {', '.join(unknown)}")
            )
        if task.id is not None:
            targets = edges.setdefault(task.id, [])
            targets.extend(dep for dep in ids if dep in index.by_id and dep not in targets)
        # Seed 002 "Claimability Rule": claimable only when every dependency is MERGED.
        if task.status == TaskStatus.CLAIMED:
            waiting = [
                f"{dep} is {index.by_id[dep].status or 'unknown'}"
                for dep in ids
                if dep in index.by_id and index.by_id[dep].status != TaskStatus.MERGED
            ]
            if waiting:
                detail = "; ".join(waiting)
                found.append(_violation("claimed_depends_merged", task.subject, detail))
    order = {task_id: task.position for task_id, task in index.by_id.items()}
    for cycle in _dependency_cycles(list(index.by_id), edges, order):
        path = " → ".join([*cycle, cycle[0]])
        found.append(_violation("depends_on_acyclic", cycle[0], path))
    return found


def _dependency_cycles(
    roots: list[str], edges: Mapping[str, list[str]], order: Mapping[str, int]
) -> list[list[str]]:
    """One cycle per back edge of a depth-first walk, each rotated to start at its first task.

    Iterative, so a long dependency chain cannot hit the recursion limit. Every strongly
    connected component with a cycle yields at least one; each cycle is reported once.
    """
    on_path: dict[str, bool] = {}  # True while on the current path, False once finished
    cycles: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for root in roots:
        if root in on_path:
            continue
        path = [root]
        on_path[root] = True
        stack = [iter(edges.get(root, ()))]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                on_path[path.pop()] = False
            elif on_path.get(child) is True:
                cycle = path[path.index(child) :]
                start = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                cycle = cycle[start:] + cycle[:start]
                if tuple(cycle) not in seen:
                    seen.add(tuple(cycle))
                    cycles.append(cycle)
            elif child not in on_path:
                on_path[child] = True
                path.append(child)
                stack.append(iter(edges.get(child, ())))
    return cycles


def _check_tasks(index: _Tasks, now: datetime) -> list[Violation]:
    found = list(index.shape) + _check_task_identity(index)
    for task in index.tasks:
        found += _check_task_fields(task)
        found += _check_claim(task, now)
        found += _check_task_history(task)
    return found + _check_dependencies(index)


# --- agents -------------------------------------------------------------------------------------


def _agent_task(agent: Mapping[str, Any]) -> Any:
    """The task an agent holds: `current_task`, or `task` as seed 002's planner entry spells it."""
    current = agent.get("current_task")
    return current if _present(current) else agent.get("task")


def _check_agent(agent_id: str, agent: Mapping[str, Any], now: datetime) -> list[Violation]:
    subject = f"agent {agent_id}"
    found: list[Violation] = []
    status = _status(agent, AGENT_STATES)
    if status is None:
        found.append(_violation("agent_status_valid", subject, f"status {agent.get('status')!r}"))
    role = agent.get("role")
    if role == "code-reviewer":  # how liza-agent.sh spells code_reviewer (original-liza.md)
        role = "code_reviewer"
    if not (isinstance(role, str) and agent_id_matches_role(agent_id, role)):
        found.append(_violation("agent_id_role", subject, f"role {role!r}"))
    if status == AgentStatus.WORKING:
        # The original reads `current_task` here (WORKING is a coder's state, SPEC §5.2).
        if not _present(agent.get("current_task")):
            found.append(_violation("working_has_task", subject, "current_task is missing"))
        lease = agent.get("lease_expires")
        if not _present(lease):
            found.append(_violation("working_lease_missing", subject, "lease_expires is missing"))
        elif problem := _lease_problem(lease, now):
            found.append(_violation("working_lease", subject, problem))
    return found


def _check_shared_tasks(agents: Mapping[str, Mapping[str, Any]]) -> list[Violation]:
    """Two agents whose current task is the same task (the subject is that task)."""
    holders: dict[str, list[str]] = {}
    for agent_id, agent in agents.items():
        task = _agent_task(agent)
        if _present(task):
            holders.setdefault(_key(task) or repr(task), []).append(agent_id)
    return [
        _violation("agent_task_unique", task, f"held by {', '.join(ids)}")
        for task, ids in holders.items()
        if len(ids) > 1
    ]


def _check_active_assignments(index: _Tasks) -> list[Violation]:
    """One agent id assigned to several CLAIMED/READY_FOR_REVIEW/REJECTED tasks."""
    held: dict[str, list[str]] = {}
    for task in index.tasks:
        agent_id = _key(task.data.get("assigned_to"))
        if agent_id is not None and task.status in ACTIVE_CODER_STATES:
            held.setdefault(agent_id, []).append(f"{task.subject} ({task.status})")
    return [
        _violation("coder_single_active_task", f"agent {agent_id}", f"holds {', '.join(tasks)}")
        for agent_id, tasks in held.items()
        if len(tasks) > 1
    ]


def _check_agents(raw: Any, index: _Tasks, now: datetime) -> list[Violation]:
    found: list[Violation] = []
    agents: dict[str, Mapping[str, Any]] = {}
    if raw is not None and not isinstance(raw, Mapping):
        detail = f"agents is {type(raw).__name__}, not a mapping by agent id"
        found.append(_violation("section_shape", "agents", detail))
    elif raw is not None:
        for key, agent in raw.items():
            agent_id = str(key)
            if isinstance(agent, Mapping):
                agents[agent_id] = agent
            else:
                detail = f"{type(agent).__name__}, not a mapping"
                found.append(_violation("entry_shape", f"agent {agent_id}", detail))
    for agent_id, agent in agents.items():
        found += _check_agent(agent_id, agent, now)
    return found + _check_shared_tasks(agents) + _check_active_assignments(index)


# --- the other sections -----------------------------------------------------------------------


def _check_top_level(state: Mapping[str, Any]) -> list[Violation]:
    # An empty `tasks: []` or `agents: {}` is a legitimate new project: only absence counts,
    # and `false`, which the original's `yq -e` also takes for absence.
    return [
        _violation("required_fields", "state", f"{name} is missing")
        for name in _REQUIRED_TOP_LEVEL
        if state.get(name) is None or state.get(name) is False
    ]


def _check_goal(raw: Any) -> list[Violation]:
    if raw is None:  # required_fields reports it
        return []
    if not isinstance(raw, Mapping):
        detail = f"goal is {type(raw).__name__}, not a mapping"
        return [_violation("section_shape", "goal", detail)]
    if _status(raw, GOAL_STATES) is None:
        return [_violation("goal_status_valid", "goal", f"status {raw.get('status')!r}")]
    return []


def _check_anomaly(subject: str, anomaly: Mapping[str, Any]) -> list[Violation]:
    kind = anomaly.get("type")
    if not (isinstance(kind, str) and kind in ANOMALY_REQUIRED_FIELDS):
        return [_violation("anomaly_type", subject, f"type {kind!r}")]
    details = anomaly.get("details")
    if not isinstance(details, Mapping):
        details = {}
    missing = [name for name in ANOMALY_REQUIRED_FIELDS[kind] if not _present(details.get(name))]
    if missing:
        detail = f"{kind} details missing: {', '.join(missing)}"
        return [_violation("anomaly_details", subject, detail)]
    return []


def _check_anomalies(raw: Any) -> list[Violation]:
    if raw is None:  # optional section
        return []
    if not isinstance(raw, list):
        detail = f"anomalies is {type(raw).__name__}, not a list"
        return [_violation("section_shape", "anomalies", detail)]
    found: list[Violation] = []
    for position, anomaly in enumerate(raw, start=1):
        subject = f"anomaly #{position}"
        if isinstance(anomaly, Mapping):
            found += _check_anomaly(subject, anomaly)
        else:
            found.append(_violation("entry_shape", subject, f"{type(anomaly).__name__}"))
    return found


def _check_sprint(raw: Any, index: _Tasks, goal: Any) -> list[Violation]:
    if raw is None:  # required_fields reports it
        return []
    if not isinstance(raw, Mapping):
        detail = f"sprint is {type(raw).__name__}, not a mapping"
        return [_violation("section_shape", "sprint", detail)]
    found: list[Violation] = []
    if _status(raw, SPRINT_STATES) is None:
        found.append(_violation("sprint_status_valid", "sprint", f"status {raw.get('status')!r}"))
    scope = raw.get("scope")
    if scope is not None and not isinstance(scope, Mapping):
        detail = f"scope is {type(scope).__name__}, not a mapping"
        found.append(_violation("section_shape", "sprint.scope", detail))
    elif scope is not None and index.readable:
        unknown = [
            f"{part}: {_key(ref) or repr(ref)}"
            for part in ("planned", "stretch")
            for ref in _as_list(scope.get(part))
            if _key(ref) not in index.by_id
        ]
        if unknown:
            found.append(_violation("sprint_scope_exists", "sprint", "; ".join(unknown)))
    goal_ref = raw.get("goal_ref")
    goal_id = goal.get("id") if isinstance(goal, Mapping) else None
    if _present(goal_ref) and goal_ref != goal_id:
        detail = f"goal_ref {goal_ref!r}, goal.id {goal_id!r}"
        found.append(_violation("sprint_goal_ref", "sprint", detail))
    timeline = raw.get("timeline")
    if not (isinstance(timeline, Mapping) and _present(timeline.get("started"))):
        found.append(_violation("sprint_started", "sprint", "timeline.started is missing"))
    return found


def _check_handoffs(raw: Any) -> list[Violation]:
    if raw is None:  # optional section
        return []
    if not isinstance(raw, Mapping):
        return [_violation("section_shape", "handoff", f"handoff is {type(raw).__name__}")]
    found: list[Violation] = []
    for task, entry in raw.items():
        subject = f"handoff {task}"
        if not isinstance(entry, Mapping):
            found.append(_violation("entry_shape", subject, type(entry).__name__))
            continue
        missing = [name for name in ("summary", "next_action") if not _present(entry.get(name))]
        if missing:
            found.append(_violation("handoff_fields", subject, f"missing: {', '.join(missing)}"))
    return found


def _check_discoveries(raw: Any) -> list[Violation]:
    if raw is None:  # optional section
        return []
    if not isinstance(raw, list):
        return [_violation("section_shape", "discovered", f"discovered is {type(raw).__name__}")]
    found: list[Violation] = []
    for position, entry in enumerate(raw, start=1):
        if not isinstance(entry, Mapping):
            found.append(_violation("entry_shape", f"discovery #{position}", type(entry).__name__))
            continue
        urgency = entry.get("urgency")
        if urgency is not None and urgency not in ("deferred", "immediate"):
            subject = _key(entry.get("id")) or f"discovery #{position}"
            found.append(_violation("discovery_urgency", subject, f"urgency {urgency!r}"))
    return found


def _check_config(raw: Any) -> list[Violation]:
    if raw is None or isinstance(raw, Mapping):  # absence is reported by required_fields
        return []
    return [_violation("section_shape", "config", f"config is {type(raw).__name__}")]


# --- entry point --------------------------------------------------------------------------------


def validate_state(state: Mapping[str, Any], *, now: datetime | None = None) -> list[Violation]:
    """Every violation of the seeds' invariants in `state`; an empty list means VALID.

    Time-relative rules are judged at `now`, by default `reference_time(state)`. Violations come
    section by section in state.yaml order, then by rule (INVARIANTS order), then file order.
    """
    if not isinstance(state, Mapping):
        detail = f"state is {type(state).__name__}, not a mapping"
        return [_violation("section_shape", "state", detail)]
    moment = reference_time(state) if now is None else parse_timestamp(now)
    index = _read_tasks(state.get("tasks"))
    sections = (
        _check_top_level(state),
        _check_goal(state.get("goal")),
        _check_tasks(index, moment),
        _check_agents(state.get("agents"), index, moment),
        _check_discoveries(state.get("discovered")),
        _check_handoffs(state.get("handoff")),
        _check_anomalies(state.get("anomalies")),
        _check_sprint(state.get("sprint"), index, state.get("goal")),
        _check_config(state.get("config")),
    )
    # sorted() is stable: within a rule, the order of the file is kept.
    return [
        violation
        for section in sections
        for violation in sorted(section, key=lambda v: _RULE_ORDER[v.rule])
    ]
