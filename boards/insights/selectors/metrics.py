"""What an operator's scrape reads from the database (`/metrics`, issue #11): per project, its
tasks per state, open alerts by level, leases running out within a minute, when the watcher
last swept it, and (issue 24) what its runs cost in USD and tokens of each kind. Five queries,
whatever the number of projects; plus one per budget for the budgets' shares spent."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Sum

from agents.models import Budget, RunUsage
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.budgets import budget_state
from boards.protocol import TaskStatus

SOON = timedelta(minutes=1)
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")


@dataclass
class ProjectFigures:
    slug: str
    last_swept: datetime | None
    tasks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TaskStatus, 0))
    open_alerts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(Alert.Level, 0))
    leases_expiring_soon: int = 0
    cost_usd: float = 0.0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    budgets: list[tuple[str, str, float]] = field(default_factory=list)  # scope, subject, share


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
    for pk, usd, *tokens in (
        RunUsage.objects.values_list("project_id")
        .annotate(usd=Sum("cost_usd"), **{kind: Sum(f"{kind}_tokens") for kind in TOKEN_KINDS})
        .order_by()
    ):
        figures[pk].cost_usd = float(usd or 0)
        figures[pk].tokens = {
            kind: int(n or 0) for kind, n in zip(TOKEN_KINDS, tokens, strict=True)
        }
    for budget in Budget.objects.select_related("project").order_by(
        "project_id", "scope", "subject"
    ):
        state = budget_state(budget)
        figures[budget.project_id].budgets.append((budget.scope, budget.subject, state.share))
    return list(figures.values())
