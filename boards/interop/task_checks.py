"""The validator's checks of the `tasks` and `agents` sections (seeds 000 and 002): each task's
fields for its status, its claim and lease, its history, its dependencies (unknown, cyclic,
unfinished under a claim), and each agent's state, task and lease against the tasks. Pure
functions over the parsed file; a malformed entry is a violation, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from boards.interop.invariants import (
    _DEFINITION_EXEMPT,
    _FIELDS_REQUIRED_BY_STATUS,
    Violation,
    _as_list,
    _key,
    _lease_problem,
    _misshapen,
    _present,
    _status,
    _violation,
    worktree_problem,
)
from boards.protocol import (
    ACTIVE_CODER_STATES,
    AGENT_STATES,
    MAX_BLOCKED_QUESTIONS,
    TASK_STATES,
    AgentStatus,
    TaskStatus,
    agent_id_matches_role,
)


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
    if not isinstance(raw, list):  # absent: required_fields reports it
        return _Tasks([], {}, False, _misshapen(raw, "tasks", list))
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
    found = _misshapen(raw, "agents", Mapping)
    agents: dict[str, Mapping[str, Any]] = {}
    if isinstance(raw, Mapping):
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
