"""`liza_import`: a file-based Liza blackboard becomes a new project (SPEC §8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import Agent
from boards.coordination.models.projects import Goal, Project, ProjectConfig
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.coordination.services.projects import project_create
from boards.interop.invariants import Violation
from boards.interop.validation import validate_state

from .plan import ImportPlan
from .reading import plan_import
from .yaml_io import LizaImportError


class LizaImportRefused(LizaImportError):
    """Strict import of a state that breaks the protocol's invariants: nothing was written."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = list(violations)
        super().__init__([str(v) for v in self.violations])


@dataclass(frozen=True)
class ImportResult:
    project: Project
    violations: list[Violation]  # empty unless the import was lenient
    warnings: list[str]  # what a lenient import read differently from the file


def import_project(
    *, slug: str, name: str, state: Any, log: Any, lenient: bool, now: datetime
) -> ImportResult:
    """Create project `slug` from a parsed state.yaml and log.yaml, in one transaction.

    LizaFileError when the files cannot be stored at all; LizaImportRefused when the state breaks
    an invariant and `lenient` is false. Time rules are judged at the file's own reference
    time (its latest heartbeat), so an old but consistent blackboard imports strictly.
    """
    plan = plan_import(state, log, lenient=lenient)
    violations = validate_state(state)
    if violations and not lenient:
        raise LizaImportRefused(violations)
    with transaction.atomic():
        if Project.objects.filter(slug=slug).exists():
            raise LizaImportError([f"project {slug!r} already exists; import into a new slug"])
        try:
            project = project_create(slug=slug, name=name or slug, now=now)
        except ValidationError as exc:
            raise LizaImportError(
                [f"project {name}: {m}" for name, ms in exc.message_dict.items() for m in ms]
            ) from exc
        _store(plan, project)
    return ImportResult(project=project, violations=violations, warnings=plan.warnings)


def _store(plan: ImportPlan, project: Project) -> None:
    config = _store_config(plan.config, project)
    goal = _store_goal(plan.goal, project)
    tasks = _store_tasks(plan, project, goal)
    _store_reviews(plan, project, tasks, config)
    _store_agents(plan, project, tasks)
    _store_records(plan, project, tasks)
    _store_sprint(plan, project, goal, tasks)
    _store_breaker(plan, project)
    _store_events(plan, project, tasks)


def _store_config(values: dict[str, Any], project: Project) -> ProjectConfig:
    config = ProjectConfig.objects.get(project=project)
    for name, value in values.items():
        setattr(config, name, value)
    config.save()
    return config


def _store_goal(goal: Goal | None, project: Project) -> Goal | None:
    if goal is not None:
        goal.project = project
        goal.save()
    return goal


def _store_tasks(plan: ImportPlan, project: Project, goal: Goal | None) -> dict[str, Task]:
    # Every task of the file belongs to the file's one goal (seed 002 has a single `goal`).
    for task in plan.tasks:
        task.project = project
        task.goal = goal
    Task.objects.bulk_create(plan.tasks)
    tasks = {task.key: task for task in plan.tasks}
    through = Task.depends_on.through
    through.objects.bulk_create(
        through(from_task_id=tasks[key].pk, to_task_id=tasks[dep].pk)
        for key, deps in plan.depends_on.items()
        for dep in deps
    )
    return tasks


def _store_reviews(
    plan: ImportPlan, project: Project, tasks: dict[str, Task], config: ProjectConfig
) -> None:
    """The open review round of READY_FOR_REVIEW tasks (seed 002 reviewing_by)."""
    reviews: list[Review] = []
    for key, round_ in plan.reviews.items():
        task = tasks[key]
        for review in round_:
            # The file does not say when the review was claimed: a lease runs lease_duration
            # from its claim, so that is the best guess; without a lease, the file's own now.
            # Never later than that now: a lease longer than one duration (renewed by
            # heartbeats, or a longer config) would put the claim in the file's future.
            claimed = plan.reference
            if review.lease_expires is not None:
                claimed = min(
                    plan.reference,
                    review.lease_expires - timedelta(seconds=task.lease_seconds(config)),
                )
            review.project = project
            review.task = task
            review.claimed_at = claimed
            review.verdict_at = claimed if review.verdict else None
            reviews.append(review)
    Review.objects.bulk_create(reviews)


def _store_agents(plan: ImportPlan, project: Project, tasks: dict[str, Task]) -> None:
    agents: list[Agent] = []
    for agent, task_key in plan.agents:
        agent.project = project
        agent.current_task = tasks.get(task_key) if task_key else None
        agents.append(agent)
    Agent.objects.bulk_create(agents)


def _store_records(plan: ImportPlan, project: Project, tasks: dict[str, Task]) -> None:
    """Discoveries, handoffs, human notes, spec changes and anomalies."""
    for discovery in plan.discoveries:
        discovery.project = project
    Discovery.objects.bulk_create(plan.discoveries)
    Handoff.objects.bulk_create(_on_tasks(plan.handoffs, project, tasks))
    users = get_user_model().objects
    notes = []
    for key, note, author in plan.notes:
        note.project = project
        note.task = tasks[key] if key else None
        # Authors are kept only where the user exists in this deployment.
        note.author = (
            users.filter(**{users.model.USERNAME_FIELD: author}).first() if author else None
        )
        notes.append(note)
    HumanNote.objects.bulk_create(notes)
    for change in plan.spec_changes:
        change.project = project
    SpecChange.objects.bulk_create(plan.spec_changes)
    Anomaly.objects.bulk_create(_on_tasks(plan.anomalies, project, tasks))


def _on_tasks(pairs: list[tuple[Any, Any]], project: Project, tasks: dict[str, Task]) -> list:
    """The rows of (task key, row) pairs, each set on the project and on its task (none for a
    row of the project's, whose key is empty)."""
    rows = []
    for key, row in pairs:
        row.project = project
        row.task = tasks[key] if key else None
        rows.append(row)
    return rows


def _store_sprint(
    plan: ImportPlan, project: Project, goal: Goal | None, tasks: dict[str, Task]
) -> None:
    sprint = plan.sprint
    if sprint is None or goal is None:  # a sprint without a goal is a LizaFileError
        return
    sprint.project = project
    sprint.goal = goal
    sprint.save()
    sprint.planned.set([tasks[key] for key in plan.sprint_scope.get("planned", [])])
    sprint.stretch.set([tasks[key] for key in plan.sprint_scope.get("stretch", [])])


def _store_breaker(plan: ImportPlan, project: Project) -> None:
    breaker = plan.breaker
    if breaker is not None:
        CircuitBreaker.objects.filter(project=project).update(
            status=breaker.status,
            last_check=breaker.last_check,
            current_trigger=breaker.current_trigger,
        )
    for check in plan.breaker_checks:
        check.project = project
    CircuitBreakerCheck.objects.bulk_create(plan.breaker_checks)


def _store_events(plan: ImportPlan, project: Project, tasks: dict[str, Task]) -> None:
    events = []
    for planned in plan.events:
        event = planned.event
        event.project = project
        event.task = tasks[planned.task_key] if planned.task_key else None
        events.append(event)
    Event.objects.bulk_create(events)
