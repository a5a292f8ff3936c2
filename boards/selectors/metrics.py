"""What an operator's scrape reads from the database (`/metrics`, issue #11): per project, its
tasks per state, open alerts by level, leases running out within a minute, and when the watcher
last swept it. Four queries, whatever the number of projects."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count

from boards.models import Alert, Project, Task
from boards.protocol import TaskStatus

SOON = timedelta(minutes=1)


@dataclass
class ProjectFigures:
    slug: str
    last_swept: datetime | None
    tasks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TaskStatus, 0))
    open_alerts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(Alert.Level, 0))
    leases_expiring_soon: int = 0


def operator_figures(*, now: datetime) -> list[ProjectFigures]:
    figures = {
        pk: ProjectFigures(slug, last_swept)
        for pk, slug, last_swept in Project.objects.order_by("slug").values_list(
            "pk", "slug", "last_swept"
        )
    }
    for pk, status, n in (
        Task.objects.values_list("project_id", "status").annotate(n=Count("id")).order_by()
    ):
        figures[pk].tasks[status] = n
    for pk, level, n in (
        Alert.objects.filter(resolved_at__isnull=True)
        .values_list("project_id", "level")
        .annotate(n=Count("id"))
        .order_by()
    ):
        figures[pk].open_alerts[level] = n
    for pk, n in (
        Task.objects.filter(
            status=TaskStatus.CLAIMED, lease_expires__gte=now, lease_expires__lt=now + SOON
        )
        .values_list("project_id")
        .annotate(n=Count("id"))
        .order_by()
    ):
        figures[pk].leases_expiring_soon = n
    return list(figures.values())
