"""Goals and sprints: which one is current, and seed 002's live sprint metrics."""

from __future__ import annotations

from functools import cache

from django.db import connection
from django.db.models import Aggregate, Count, Q, QuerySet, Sum

from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import in_project
from boards.protocol import Action, GoalStatus, TaskStatus


def sprint_open(*, project: Project) -> Sprint | None:
    """The project's open sprint (IN_PROGRESS or CHECKPOINT; at most one, SPEC §4)."""
    return Sprint.objects.filter(project=project, status__in=p.OPEN_SPRINT_STATES).first()


def sprint_current(*, project: Project) -> Sprint | None:
    """The open sprint, else the latest one: what the board shows and operations act on.

    One query (every claim and heartbeat asks, through `stop_reason`): the open sprint sorts
    first, then the latest.
    """
    return rows.fetch(Sprint, _current_sql(), [project.pk, *p.OPEN_SPRINT_STATES])


@cache
def _current_sql() -> str:
    """`sprint_current`'s statement, written once (boards.coordination.rows: it runs on every claim
    and heartbeat)."""
    return sprint_current_sql("%s")


def sprint_current_sql(project: str) -> str:
    """THE current sprint as SQL, for the project `project` (a placeholder, or a column of an
    enclosing statement: the heartbeat reads it beside its agent row); its parameters are
    `OPEN_SPRINT_STATES`, after any of `project`. The ORM's
    `order_by(Case(When(status__in=open)), "-started", "-id")`."""
    states = ", ".join(["%s"] * len(p.OPEN_SPRINT_STATES))
    return _current_row_sql(Sprint, project, f"IN ({states})", latest="started")


def sprint_get(*, project: Project, sprint_id: str) -> Sprint:
    return in_project(Sprint.objects.all(), project, what="sprint", sprint_id=sprint_id)


def goal_current(*, project: Project) -> Goal | None:
    """The goal IN_PROGRESS, else the latest one (SPEC §13: operations act on the latest).

    One query (the board header asks on every render): the goal IN_PROGRESS (at most one, a
    constraint) sorts first, then the latest."""
    return rows.fetch(Goal, _goal_sql(), [project.pk, GoalStatus.IN_PROGRESS])


@cache
def _goal_sql() -> str:
    return goal_current_sql("%s")


def goal_current_sql(project: str) -> str:
    """THE current goal as SQL, for the project `project` (a placeholder, or a column of an
    enclosing statement: the board header reads it beside the sprint); its parameter is
    `IN_PROGRESS`, after any of `project`. The ORM's
    `order_by(Case(When(status=IN_PROGRESS)), "-created", "-id")`."""
    return _current_row_sql(Goal, project, "= %s", latest="created")


def _current_row_sql(model, project: str, first: str, *, latest: str) -> str:
    """The project's one row of `model` whose status passes `first` (a test on the status),
    else its latest by `latest`, then by id."""
    quote = connection.ops.quote_name
    return rows.select_sql(
        model,
        f"{quote('project_id')} = {project}",
        tail=f"ORDER BY CASE WHEN {quote('status')} {first} THEN 0 ELSE 1 END, "
        f"{quote(latest)} DESC, {quote('id')} DESC LIMIT 1",
    )


def goal_in_progress(*, project: Project) -> Goal | None:
    return Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS).first()


def goal_get(*, project: Project, goal_id: str) -> Goal:
    return in_project(Goal.objects.all(), project, what="goal", goal_id=goal_id)


def sprint_unfinished_keys(sprint: Sprint) -> list[str]:
    """Planned tasks of `sprint` that are not terminal yet (COMPLETED needs none)."""
    return list(
        sprint.planned.exclude(status__in=p.TERMINAL_TASK_STATES).values_list("key", flat=True)
    )


def sprint_done(sprint: Sprint) -> bool:
    """Seed 000 trigger "All planned tasks terminal" (a sprint with no plan is never done)."""
    return sprint.planned.exists() and not sprint_unfinished_keys(sprint)


def sprint_metrics(sprint: Sprint) -> dict[str, object]:
    """Seed 002 `sprint.metrics`, computed over the sprint's planned tasks.

    Seed 002's example fixes the reading: with task-1 MERGED and task-4 SUPERSEDED it counts
    tasks_done 2 (terminal), task-2 REJECTED is "in progress", and the stretch task-6 is not
    among tasks_blocked.
    """
    # Both aggregates in one statement: the board header reads them on every render.
    return sprint_metrics_of(rows.aggregates(*sprint_metrics_parts(sprint)))


def sprint_metrics_parts(sprint: Sprint) -> list[tuple[QuerySet, dict[str, Aggregate]]]:
    """What `sprint_metrics` counts, as `rows.aggregates` parts: a page that reads other
    counts too (the board header) reads these in the same statement, then `sprint_metrics_of`."""
    planned = Task.objects.filter(planned_in=sprint)
    # Only the three actions counted below (a sprint's history is mostly other events), of
    # its planned tasks, read from the sprint's own rows (no join through the tasks).
    counted = (Action.APPROVED, Action.REJECTED, Action.READY_FOR_REVIEW)
    events = Event.objects.filter(
        project_id=sprint.project_id,
        task_id__in=Sprint.planned.through.objects.filter(sprint=sprint).values("task_id"),
        outcome=Event.Outcome.APPLIED,
        action__in=counted,
    )
    if sprint.started:
        events = events.filter(timestamp__gte=sprint.started)
    return [
        (planned, dict(_TASK_COUNTS)),
        (
            events,
            {
                "approvals": Count("id", filter=Q(action=Action.APPROVED)),
                "rejections": Count("id", filter=Q(action=Action.REJECTED)),
                "submitted": Count("id", filter=Q(action=Action.READY_FOR_REVIEW)),
            },
        ),
    ]


_TASK_COUNTS = {
    "tasks_done": Count("id", filter=Q(status__in=p.TERMINAL_TASK_STATES)),
    "tasks_in_progress": Count("id", filter=Q(status__in=p.IN_PROGRESS_TASK_STATES)),
    "tasks_blocked": Count("id", filter=Q(status=TaskStatus.BLOCKED)),
    "iterations_total": Sum("iteration", default=0),
    "review_cycles_total": Sum("review_cycles_total", default=0),
}


def sprint_metrics_of(row: dict[str, object]) -> dict[str, object]:
    """`sprint_metrics` from what its parts counted (`row`, by name)."""
    counts = {name: row[name] for name in _TASK_COUNTS}
    approvals, rejections = row["approvals"], row["rejections"]
    verdict_count = approvals + rejections
    approval_rate = round(100 * approvals / verdict_count) if verdict_count else None
    submitted = row["submitted"]
    return {
        **counts,
        "review_verdict_approvals": approvals,
        "review_verdict_rejections": rejections,
        "review_verdict_count": verdict_count,
        "review_verdict_approval_rate_percent": approval_rate,
        "task_submitted_for_review_count": submitted,
        "task_outcome_approval_rate_percent": (
            round(100 * approvals / submitted) if submitted else None
        ),
        # SPEC §9: rubber-stamping warning above 95 % approvals over at least 5 verdicts.
        "rubber_stamp_warning": p.rubber_stamp(approvals, verdict_count),
    }


def sprint_metrics_live(sprint: Sprint) -> bool:
    """Whether the sprint's metrics are counted now: while it is open (and when it ended
    without its snapshot); afterwards they are the snapshot taken at its end."""
    return sprint.is_open or not sprint.metrics


def sprint_metrics_current(sprint: Sprint) -> dict[str, object]:
    """Live while the sprint is open; the snapshot taken at its end afterwards."""
    return sprint_metrics(sprint) if sprint_metrics_live(sprint) else sprint.metrics
