"""The board header (SPEC §7): goal, sprint, its metrics, the numbers every viewer shares, the
breaker and the watcher, and the ids the filter menus offer — in two statements."""

from __future__ import annotations

import functools
from datetime import datetime
from functools import cache

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from boards import protocol as p
from boards.board.selectors.cards import ALERT_SEVERITY
from boards.coordination import rows
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.records import Alert, CircuitBreaker
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.breaker import breaker_sql
from boards.coordination.selectors.sprints import (
    goal_current_sql,
    sprint_current_sql,
    sprint_metrics_current,
    sprint_metrics_live,
    sprint_metrics_of,
    sprint_metrics_parts,
)
from boards.protocol import TaskStatus
from boards.watch.selectors.watch import watcher_seen


def open_alerts(*, project: Project) -> QuerySet:
    """The project's unresolved alerts: the header's counts and the alerts panel."""
    return Alert.objects.filter(project=project, resolved_at__isnull=True)


def blocked_tasks(*, project: Project) -> QuerySet:
    """The project's BLOCKED tasks (the humans' queue, whatever the filters or the sprint)."""
    return Task.objects.filter(project=project, status=TaskStatus.BLOCKED)


def header_counts(*, project: Project, sprint=None) -> tuple[dict, dict[str, int], dict]:
    """The numbers every viewer of the board reads the same (issue 25), in one statement: the
    header's "blocked" and the banner's "N blocked tasks" are one count (`blocked_tasks`),
    redrawn with the header on every move; and the open alerts by level, most severe first,
    levels without any left out. With `sprint`, its metrics' counts in the same statement
    (`sprint_metrics_parts`), answered by name in the third value. The statement is built
    once per shape (`rows.compiled`)."""
    dated = sprint is not None and sprint.started is not None
    values = [project.pk, *([sprint.pk, sprint.project_id] if sprint else [])]
    shape = ("header counts", sprint is not None, dated)
    build = functools.partial(_header_counts_sql, sprint is not None, dated)
    [statement] = rows.compiled(shape, build, *values, *([sprint.started] if dated else []))
    row = rows.aggregated(*statement)
    by_level = {level: row[f"alerts_{level}"] for level in ALERT_SEVERITY}
    return {"blocked": row["blocked"]}, {level: n for level, n in by_level.items() if n}, row


def _header_counts_sql(with_sprint: bool, dated: bool, project_pk, *values) -> list:
    project = Project(pk=project_pk)
    parts = [
        (blocked_tasks(project=project), {"blocked": Count("id")}),
        (
            open_alerts(project=project),
            {f"alerts_{level}": Count("id", filter=Q(level=level)) for level in ALERT_SEVERITY},
        ),
    ]
    if with_sprint:
        started = values[2] if dated else None
        sprint = Sprint(pk=values[0], project_id=values[1], started=started)
        parts.extend(sprint_metrics_parts(sprint))
    return [rows.aggregates_sql(*parts)]


def header_rows(*, project: Project) -> tuple[Sprint | None, CircuitBreaker, Goal | None]:
    """`sprint_current`, `breaker_status` and `goal_current` in one statement: each one's own
    SQL, side by side."""
    return _header_and_menus(project)[:3]


def _header_and_menus(project: Project) -> tuple[Sprint | None, CircuitBreaker, Goal | None, dict]:
    """`header_rows` and, in the same statement, the ids the board's filter menus offer
    (sprints and goals, each in its model's order)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _header_sql(),
            # In the order of the placeholders: the menus' (in the select list), then the rows'.
            [*[project.pk] * 3, *p.OPEN_SPRINT_STATES, *[project.pk] * 2, p.GoalStatus.IN_PROGRESS],
        )
        values = cursor.fetchone()
    found: list = []
    for model, _alias in _HEADER_ROWS:
        width = rows.width(model)
        chunk, values = values[:width], values[width:]
        found.append(rows.from_row(model, chunk) if chunk[0] is not None else None)
    sprint, breaker, goal = found
    menus = {"sprints": values[0], "goals": values[1]}
    return sprint, breaker or CircuitBreaker(project=project), goal, menus


_HEADER_ROWS = ((Sprint, "s"), (CircuitBreaker, "b"), (Goal, "g"))


def _menu_ids(model, field: str) -> str:
    """`ARRAY(...)` of one project's `field` values in `model`'s own order (its Meta)."""
    meta, quote = model._meta, connection.ops.quote_name
    order = ", ".join(
        quote(meta.get_field(name.lstrip("-")).column) + (" DESC" if name[0] == "-" else "")
        for name in meta.ordering
    )
    column = quote(meta.get_field(field).column)
    return (
        f"ARRAY(SELECT {column} FROM {quote(meta.db_table)} WHERE project_id = %s ORDER BY {order})"
    )


@cache
def _header_sql() -> str:
    columns = ", ".join(rows.select_list(model, alias) for model, alias in _HEADER_ROWS)
    return (
        f"SELECT {columns}, {_menu_ids(Sprint, 'sprint_id')}, {_menu_ids(Goal, 'goal_id')}"
        " FROM (SELECT 1) one"
        f" LEFT JOIN LATERAL ({sprint_current_sql('%s')}) s ON TRUE"
        f" LEFT JOIN LATERAL ({breaker_sql('%s')}) b ON TRUE"
        f" LEFT JOIN LATERAL ({goal_current_sql('%s')}) g ON TRUE"
    )


def board_header(
    *, project: Project, metrics: bool = True, now: datetime | None = None
) -> dict[str, object]:
    """The board header: goal, sprint status and deadline, live metrics (seed 002), the counts
    every viewer shares (`header_counts`), and when the watcher last swept the project."""
    sprint, breaker, goal, menus = _header_and_menus(project)
    config = config_of(project)
    # Counted now, the sprint's metrics are read in the counts' statement.
    live = sprint is not None and metrics and sprint_metrics_live(sprint)
    counts, alert_counts, counted = header_counts(project=project, sprint=sprint if live else None)
    shown = None
    if sprint is not None and metrics:
        shown = sprint_metrics_of(counted) if live else sprint_metrics_current(sprint)
    return {
        "project": project,
        "config": config,
        "counts": counts,
        "watcher": watcher_seen(project=project, config=config, now=now or timezone.now()),
        "open_alerts": alert_counts,
        "breaker": breaker,
        "goal": goal,
        "sprint": sprint,
        "metrics": shown,
        # The ids the board's filter menus offer (read with the rows above).
        "menus": menus,
    }
