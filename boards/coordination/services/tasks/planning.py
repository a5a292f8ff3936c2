"""The planner's task operations (SPEC §6): create, dependencies, finalize, and resolving
BLOCKED — release, rescope, abandon (seed 000 edges out of DRAFT and BLOCKED).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from boards import protocol as p
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.tasks import HumanNote, Task
from boards.coordination.selectors.access import PLAN, config_of
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.selectors.tasks import dependency_cycle, is_limit_blocked
from boards.coordination.services.actors import PLANNER, Actor, is_human
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import require_role
from boards.coordination.services.cleaning import clean_text, resolve_keys
from boards.coordination.services.edges import (
    move_task,
    require_task_status,
    save_task,
    task_transition_run,
)
from boards.coordination.services.locking import agent_row, lock_task
from boards.coordination.services.sprints import sprint_complete_if_done
from boards.coordination.services.tasks.holders import release_holder
from boards.coordination.services.tasks.limits import clean_limit, refuse_gate_lift
from boards.errors import (
    Conflict,
    Forbidden,
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
    require_role(actor, project, agent_roles=PLANNER, human=PLAN)
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
        record_event(
            project=project,
            actor=actor,
            action="created",
            task=task,
            now=now,
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


@records_refusals
def task_set_dependencies(
    *, task: Task, actor: Actor, depends_on: Sequence[str], now: datetime
) -> Task:
    """Replace depends_on; cycles and unknown keys are refused with 400 naming the field."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER, human=PLAN)
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=project.pk)
        task = lock_task(task)
        deps = _replace_dependencies(task, depends_on)
        save_task(task, now)
        record_event(
            project=project,
            actor=actor,
            action="dependencies_set",
            task=task,
            now=now,
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
    require_role(actor, project, agent_roles=PLANNER, human=PLAN)
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
    with transaction.atomic():
        if depends_on is not None:
            Project.objects.select_for_update().get(pk=project.pk)
        task = lock_task(task)
        diff = {
            name: (getattr(task, name), value)
            for name, value in cleaned.items()
            if getattr(task, name) != value
        }
        if task.is_terminal and (diff or depends_on is not None):
            raise Attempt(project=project, actor=actor, action="edit", now=now).conflict(
                f"{task.key} is {task.status}: a finished task is not edited",
                task=task,
                details={"status": task.status},
            )
        contract = sorted(set(diff) & set(CONTRACT_FIELDS))
        if contract and task.status not in EDITABLE_CONTRACT:
            raise Attempt(project=project, actor=actor, action="edit", now=now).conflict(
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
        record_event(
            project=project,
            actor=actor,
            action=p.Action.EDITED,
            task=task,
            now=now,
            detail=f"{task.key}: {', '.join(diff)} edited",
            data={"changes": {name: {"old": old, "new": new} for name, (old, new) in diff.items()}},
        )
    return task


@records_refusals
def task_finalize(*, task: Task, actor: Actor, now: datetime) -> Task:
    """DRAFT → UNCLAIMED: needs done_when and spec_ref (seed 002)."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER, human=PLAN)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            [TaskStatus.DRAFT],
            to=TaskStatus.UNCLAIMED,
            action="finalize",
            actor=actor,
            now=now,
        )
        for field in ("done_when", "spec_ref"):
            if not getattr(task, field):
                raise ProtocolValidationError(field, "is required to finalize a DRAFT task")
        move_task(
            task,
            "finalize",
            to=TaskStatus.UNCLAIMED,
            actor=actor,
            now=now,
            action="finalized",
            detail=f"{task.key} ready to claim",
        )
    return task


@records_refusals
def task_release(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → UNCLAIMED: failed_by kept, worktree deleted (seed 000 requirements).

    A task blocked by a limit returns only by a human's written release (SPEC §5.1).
    """
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            [TaskStatus.BLOCKED],
            to=TaskStatus.UNCLAIMED,
            action="release",
            actor=actor,
            now=now,
        )
        if is_limit_blocked(task, config) and not is_human(actor):
            raise Attempt(project=project, actor=actor, action="release", now=now).refuse(
                Forbidden(
                    f"{task.key} reached a limit ({task.blocked_reason}); only rescope, "
                    "abandon or a human's written release can move it"
                ),
                task=task,
                to_status=TaskStatus.UNCLAIMED,
            )
        previous = task.assigned_to
        task.worktree = ""
        task.base_commit = ""
        task.assigned_to = ""
        task.lease_expires = None
        task.integration_fix = False
        task.blocked_reason = ""
        task.blocked_questions = []
        move_task(
            task,
            "release",
            to=TaskStatus.UNCLAIMED,
            actor=actor,
            now=now,
            action="released",
            detail=reason,
        )
        release_holder(agent_row(project, previous), task, lost="released to UNCLAIMED")
        if is_human(actor):
            # The answer is what the next coder needs: it travels with the task (seed 002).
            HumanNote.objects.create(
                project=project, task=task, timestamp=now, message=reason, author=actor
            )
    return task


@records_refusals
def task_abandon(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → ABANDONED with a rationale."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            [TaskStatus.BLOCKED],
            to=TaskStatus.ABANDONED,
            action="abandon",
            actor=actor,
            now=now,
        )
        task.worktree = ""
        task.lease_expires = None
        move_task(
            task,
            "abandon",
            to=TaskStatus.ABANDONED,
            actor=actor,
            now=now,
            action="abandoned",
            detail=reason,
        )
        sprint_complete_if_done(project=task.project, now=now)
    return task


@records_refusals
def task_rescope(
    *, task: Task, actor: Actor, reason: str, new_tasks: Sequence[dict[str, Any]], now: datetime
) -> list[Task]:
    """BLOCKED → SUPERSEDED, replaced by new tasks (seed 002 Rescope task).

    The new tasks carry `supersedes`, inherit the old task's dependencies unless they name
    their own, take its place in every dependent's depends_on and in the sprint scope, and the
    goal's alignment_history records the change.
    """
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    if not isinstance(new_tasks, list | tuple) or not new_tasks:
        raise ProtocolValidationError("new_tasks", "at least one replacement task is required")
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            [TaskStatus.BLOCKED],
            to=TaskStatus.SUPERSEDED,
            action="rescope",
            actor=actor,
            now=now,
        )
        old_deps = list(task.depends_on.all())
        created: list[Task] = []
        for index, spec in enumerate(new_tasks):
            if not isinstance(spec, dict):
                raise ProtocolValidationError(f"new_tasks[{index}]", "must be an object")
            spec = dict(spec)
            deps = spec.pop("depends_on", None)
            unknown = sorted(set(spec) - NEW_TASK_FIELDS)
            if unknown:
                raise ProtocolValidationError(
                    f"new_tasks[{index}]", f"unknown field(s) {', '.join(unknown)}"
                )
            spec.setdefault("priority", task.priority)
            spec.setdefault("spec_ref", task.spec_ref)
            spec.setdefault("criticality", task.criticality)
            if task.needs_human_approval:
                # The human gate travels to the replacements (seed 004 APPROVAL_REQUIRED).
                spec.setdefault("needs_human_approval", True)
            try:
                new = new_task(project=project, now=now, supersedes=task.key, **spec)
            except TypeError as exc:
                raise ProtocolValidationError(
                    f"new_tasks[{index}]", "key and description are required"
                ) from exc
            record_event(
                project=project,
                actor=actor,
                action="created",
                task=new,
                now=now,
                to_status=new.status,
                detail=f"{new.key} (rescoped from {task.key})",
            )
            dep_tasks = (
                old_deps
                if deps is None
                else resolve_keys(
                    project,
                    [d for d in deps if d not in {c.key for c in created}],
                    f"new_tasks[{index}].depends_on",
                )
                + [c for c in created if c.key in (deps or [])]
            )
            new.depends_on.set(dep_tasks)
            if new.done_when and new.spec_ref:
                new.finalize()
                save_task(new, now)
                record_event(
                    project=project,
                    actor=actor,
                    action="finalized",
                    task=new,
                    now=now,
                    from_status=TaskStatus.DRAFT,
                    to_status=TaskStatus.UNCLAIMED,
                    detail=f"{new.key} ready to claim",
                )
            created.append(new)
        for dependent in task.dependents.all():
            dependent.depends_on.remove(task)
            dependent.depends_on.add(*created)
        for sprint in Sprint.objects.filter(project=project, planned=task):
            sprint.planned.add(*created)
        for sprint in Sprint.objects.filter(project=project, stretch=task):
            sprint.stretch.add(*created)
        task.superseded_by = [c.key for c in created]
        task.rescope_reason = reason
        task.worktree = ""
        task.lease_expires = None
        task_transition_run(
            task, "supersede", actor=actor, project=project, now=now, to=TaskStatus.SUPERSEDED
        )
        save_task(task, now)
        keys = ", ".join(task.superseded_by)
        goal = (
            task.goal or Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS).first()
        )
        if goal is not None:
            goal_record_alignment(
                goal=goal,
                event=f"rescope_{task.key}",
                summary=f"{task.key} split into {keys}: {reason}",
                now=now,
            )
        record_event(
            project=project,
            actor=actor,
            action="rescoped",
            task=task,
            now=now,
            from_status=TaskStatus.BLOCKED,
            to_status=TaskStatus.SUPERSEDED,
            detail=f"SUPERSEDED → {keys} ({reason})",
            data={"superseded_by": task.superseded_by},
        )
        sprint_complete_if_done(project=task.project, now=now)
    return created


def goal_record_alignment(*, goal: Goal, event: str, summary: str, now: datetime) -> Goal:
    """Append to alignment_history (append-only: the drift trajectory through rescopes)."""
    goal = Goal.objects.select_for_update().get(pk=goal.pk)
    goal.alignment_history = [
        *goal.alignment_history,
        {"timestamp": p.format_timestamp(now), "event": event, "summary": summary},
    ]
    goal.save(update_fields=["alignment_history"])
    return goal
