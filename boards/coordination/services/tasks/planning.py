"""The planner's task operations (SPEC §6): create, edit, dependencies, finalize (seed 000
edges out of DRAFT); resolving BLOCKED is `resolutions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from boards import protocol as p
from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.selectors.tasks import dependency_cycle
from boards.coordination.services.actors import PLANNER, Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import PLAN, people, require_role
from boards.coordination.services.cleaning import clean_text, resolve_keys
from boards.coordination.services.edges import (
    move_task,
    save_task,
)
from boards.coordination.services.locking import lock_project, lock_task, lock_task_in
from boards.coordination.services.tasks.limits import clean_limit, refuse_gate_lift
from boards.errors import (
    Conflict,
    ProtocolValidationError,
)
from boards.protocol import GoalStatus, TaskStatus

# The fields a planner may give a new task (`new_task`'s, but `supersedes`, which the server
# sets): what task_create passes on, what a rescope's replacements and a converted discovery
# may say (each adds its own).
NEW_TASK_FIELDS: frozenset[str] = frozenset(
    {
        "key",
        "description",
        "priority",
        "spec_ref",
        "done_when",
        "scope",
        "criticality",
        "max_iterations",
        "max_review_cycles",
        "lease_duration_override",
        "needs_human_approval",
    }
)


def new_task(
    *,
    project: Project,
    key: str,
    description: str,
    now: datetime,
    priority: Any = 3,
    spec_ref: str = "",
    done_when: str = "",
    scope: str = "",
    criticality: str = Task.Criticality.STANDARD,
    max_iterations: int | None = None,
    max_review_cycles: int | None = None,
    lease_duration_override: int | None = None,
    supersedes: str = "",
    needs_human_approval: bool | None = None,
) -> Task:
    key = clean_text(key, "key", max_length=64)
    if not p.TASK_KEY_RE.match(key):
        raise ProtocolValidationError("key", "letters, digits, '.', '_' or '-' (at most 64)")
    if Task.objects.filter(project=project, key=key).exists():
        raise Conflict(f"task {key} already exists", {"field": "key"})
    priority = clean_limit("priority", priority)
    if criticality not in p.CRITICALITIES:
        raise ProtocolValidationError("criticality", f"one of {', '.join(p.CRITICALITIES)}")
    max_iterations = clean_limit("max_iterations", max_iterations)
    max_review_cycles = clean_limit("max_review_cycles", max_review_cycles)
    lease_duration_override = clean_limit("lease_duration_override", lease_duration_override)
    if needs_human_approval is None:
        # Seed 004 APPROVAL_REQUIRED: security-sensitive work waits for a human by default.
        needs_human_approval = criticality == Task.Criticality.SECURITY_SENSITIVE
    elif not isinstance(needs_human_approval, bool):
        raise ProtocolValidationError("needs_human_approval", "true or false")
    goal = Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS).first()
    # Text is checked before the savepoint: a refusal names its field, not a database error.
    fields = {
        "description": clean_text(description, "description"),
        "spec_ref": clean_text(spec_ref, "spec_ref", required=False, max_length=500),
        "done_when": clean_text(done_when, "done_when", required=False),
        "scope": clean_text(scope, "scope", required=False),
    }
    try:
        with transaction.atomic():
            return Task.objects.create(
                project=project,
                goal=goal,
                key=key,
                priority=priority,
                created=now,
                updated=now,
                criticality=criticality,
                max_iterations=max_iterations,
                max_review_cycles=max_review_cycles,
                lease_duration_override=lease_duration_override,
                supersedes=supersedes,
                needs_human_approval=needs_human_approval,
                **fields,
            )
    except IntegrityError as exc:
        # Two planners racing for one key: the loser gets the same answer as a late one.
        raise Conflict(f"task {key} already exists", {"field": "key"}) from exc


def check_dependencies(task: Task, deps: Sequence[Task]) -> None:
    """`task` may depend on `deps`: not itself, no cycle (seed 002), and a CLAIMED task only on
    MERGED work (seed 002 "CLAIMED task must have all depends_on tasks in MERGED status")."""
    if any(d.pk == task.pk for d in deps):
        raise ProtocolValidationError("depends_on", f"{task.key} cannot depend on itself")
    if task.status == TaskStatus.CLAIMED and any(d.status != TaskStatus.MERGED for d in deps):
        raise ProtocolValidationError(
            "depends_on", "a CLAIMED task's dependencies must all be MERGED"
        )
    cycle = dependency_cycle(task, list(deps))
    if cycle:
        raise ProtocolValidationError(
            "depends_on", f"creates a dependency cycle: {' → '.join(cycle)}"
        )


@people(PLAN)
@records_refusals
def task_create(
    *,
    project: Project,
    actor: Actor,
    key: str,
    description: str,
    now: datetime,
    depends_on: Sequence[str] = (),
    sprint_scope: str | None = None,
    **fields: Any,
) -> Task:
    """The planner writes a new DRAFT task (coders must ignore it until it is finalized)."""
    attempt = Attempt(project, actor, "task_create", now)
    require_role(attempt, agent_roles=PLANNER)
    if sprint_scope not in (None, "planned", "stretch"):
        raise ProtocolValidationError("sprint_scope", "planned, stretch or null")
    with transaction.atomic():
        task = new_task(project=project, key=key, description=description, now=now, **fields)
        if depends_on:
            deps = resolve_keys(project, depends_on, "depends_on")
            check_dependencies(task, deps)
            task.depends_on.set(deps)
        if sprint_scope:
            sprint = sprint_open(project=project)
            if sprint is None:
                raise ProtocolValidationError("sprint_scope", "the project has no open sprint")
            getattr(sprint, sprint_scope).add(task)
        attempt.record(
            action="created",
            task=task,
            to_status=task.status,
            detail=f"{task.key}: {task.description}",
        )
    return task


def _replace_dependencies(task: Task, depends_on: Sequence[str]) -> list[Task]:
    """Inside the caller's transaction, with the project row locked first (dependency edits
    serialize per project: two concurrent edits could each pass the cycle check against the
    other's uncommitted graph and close a loop together) and `task` locked."""
    if task.is_terminal:
        raise ProtocolValidationError("depends_on", f"{task.key} is {task.status}")
    deps = resolve_keys(task.project, depends_on, "depends_on")
    check_dependencies(task, deps)
    task.depends_on.set(deps)
    return deps


@people(PLAN)
@records_refusals
def task_set_dependencies(
    *, task: Task, actor: Actor, depends_on: Sequence[str], now: datetime
) -> Task:
    """Replace depends_on; cycles and unknown keys are refused with 400 naming the field."""
    project = task.project
    attempt = Attempt(project, actor, "task_set_dependencies", now)
    require_role(attempt, agent_roles=PLANNER, task=task)
    with transaction.atomic():
        lock_project(project)
        task = lock_task(task)
        deps = _replace_dependencies(task, depends_on)
        save_task(task, now)
        attempt.record(
            action="dependencies_set",
            task=task,
            detail=f"{task.key} depends on {', '.join(d.key for d in deps) or 'nothing'}",
            data={"depends_on": [d.key for d in deps]},
        )
    return task


# What a planner may edit on a task, and while it may: the contract an agent works to
# (description, done_when, spec_ref, scope, criticality) until someone has claimed it — after
# that a change is a rescope (seed 002); its place in the queue (priority), its human gate and
# its dependencies while it is not terminal (as task_set_limits and task_set_dependencies).
CONTRACT_FIELDS: tuple[str, ...] = ("description", "done_when", "spec_ref", "scope", "criticality")
EDITABLE_CONTRACT: tuple[str, ...] = (TaskStatus.DRAFT, TaskStatus.UNCLAIMED)


def _cleaned_edit(changes: dict[str, Any]) -> dict[str, Any]:
    """`task_edit`'s changes, each cleaned as its field is (400 naming an unknown one)."""
    allowed = {*CONTRACT_FIELDS, "priority", "needs_human_approval"}
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise ProtocolValidationError(
            unknown[0], f"not editable; one of {', '.join(sorted(allowed))}"
        )
    cleaned: dict[str, Any] = {}
    for name, value in changes.items():
        if name in ("priority", "needs_human_approval"):
            cleaned[name] = clean_limit(name, value)
        elif name == "criticality":
            if value not in p.CRITICALITIES:
                raise ProtocolValidationError(name, f"one of {', '.join(p.CRITICALITIES)}")
            cleaned[name] = value
        else:
            cleaned[name] = clean_text(
                value,
                name,
                required=name == "description",
                max_length=500 if name == "spec_ref" else 10_000,
            )
    return cleaned


@people(PLAN)
@records_refusals
def task_edit(
    *, task: Task, actor: Actor, now: datetime, depends_on: Sequence[str] | None = None, **changes
) -> Task:
    """Edit a task as its planner (issue 25 "plan from the board"): any of CONTRACT_FIELDS,
    priority, needs_human_approval and depends_on, in one transaction and one event.

    Only values that differ count; nothing changed writes nothing. A contract field changed
    after the task left UNCLAIMED is refused (409) and the whole edit with it.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_edit", now)
    require_role(attempt, agent_roles=PLANNER, task=task)
    cleaned = _cleaned_edit(changes)
    edit = Attempt(project, actor, "edit", now)
    with transaction.atomic():
        if depends_on is not None:
            lock_project(project)
        task = lock_task(task)
        diff = {
            name: (getattr(task, name), value)
            for name, value in cleaned.items()
            if getattr(task, name) != value
        }
        if task.is_terminal and (diff or depends_on is not None):
            raise edit.conflict(
                f"{task.key} is {task.status}: a finished task is not edited",
                task=task,
                details={"status": task.status},
            )
        contract = sorted(set(diff) & set(CONTRACT_FIELDS))
        if contract and task.status not in EDITABLE_CONTRACT:
            raise edit.conflict(
                f"{task.key} is {task.status}: its {', '.join(contract)} can change only before "
                "it is claimed; rescope it instead",
                task=task,
                details={"status": task.status, "fields": contract},
            )
        if task.status != TaskStatus.DRAFT:
            # Seed 002: a finalized task keeps its done_when and spec_ref.
            for name in ("done_when", "spec_ref"):
                if name in diff and not diff[name][1]:
                    raise ProtocolValidationError(name, f"is required once {task.key} is finalized")
        if "needs_human_approval" in diff:
            refuse_gate_lift(
                task, cleaned["needs_human_approval"], actor=actor, now=now, action="edit"
            )
        old_deps = sorted(task.depends_on.values_list("key", flat=True))
        if depends_on is not None:
            new_deps = sorted(d.key for d in _replace_dependencies(task, depends_on))
            if new_deps != old_deps:
                diff["depends_on"] = (old_deps, new_deps)
        if not diff:
            return task
        for name, (_, new) in diff.items():
            if name != "depends_on":
                setattr(task, name, new)
        save_task(task, now)
        attempt.record(
            action=p.Action.EDITED,
            task=task,
            detail=f"{task.key}: {', '.join(diff)} edited",
            data={"changes": {name: {"old": old, "new": new} for name, (old, new) in diff.items()}},
        )
    return task


@people(PLAN)
@records_refusals
def task_finalize(*, task: Task, actor: Actor, now: datetime) -> Task:
    """DRAFT → UNCLAIMED: needs done_when and spec_ref (seed 002)."""
    project = task.project
    require_role(Attempt(project, actor, "task_finalize", now), agent_roles=PLANNER, task=task)
    finalize = Attempt(project, actor, "finalize", now)
    with transaction.atomic():
        task = lock_task_in(task, [TaskStatus.DRAFT], to=TaskStatus.UNCLAIMED, attempt=finalize)
        for field in ("done_when", "spec_ref"):
            if not getattr(task, field):
                raise ProtocolValidationError(field, "is required to finalize a DRAFT task")
        move_task(task, "finalize", finalize, detail=f"{task.key} ready to claim")
    return task
