"""What the watcher finds due in a project (SPEC §9): plain reads; the service re-checks them
under its locks before acting."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import F

from agents.models import Agent
from boards.models import Project, ProjectConfig, Review, Sprint
from boards.protocol import SprintStatus, TaskStatus
from boards.selectors.leases import lease_stale_before


def projects_to_watch(*, slugs: Sequence[str] = ()) -> list[Project]:
    projects = Project.objects.select_related("config").order_by("slug")
    if slugs:
        projects = projects.filter(slug__in=slugs)
    return list(projects)


def sprint_past_deadline(*, project: Project, now: datetime) -> Sprint | None:
    """The IN_PROGRESS sprint whose deadline has passed (seed 000: deadline → CHECKPOINT)."""
    return Sprint.objects.filter(
        project=project, status=SprintStatus.IN_PROGRESS, deadline__lte=now
    ).first()


def coders_with_dead_leases(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[Agent]:
    """Coders still recorded on a CLAIMED task whose lease expired more than `lease_grace` ago."""
    return list(
        Agent.objects.filter(
            project=project,
            role=Agent.Role.CODER,
            current_task__status=TaskStatus.CLAIMED,
            current_task__assigned_to=F("agent_id"),
            current_task__lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("current_task")
        .order_by("pk")
    )


def stale_review_claims(*, project: Project, now: datetime, config: ProjectConfig) -> list[Review]:
    """Pending review claims (no verdict, not closed) whose lease is dead."""
    return list(
        Review.objects.filter(
            project=project,
            closed_at__isnull=True,
            verdict="",
            lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("task")
        .order_by("pk")
    )
