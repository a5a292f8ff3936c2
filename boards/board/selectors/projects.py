"""The project list (issue 25): what each of a person's projects is doing, in four queries
whatever the number of projects — tasks by state, the last event, the agents running."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, OuterRef, Subquery

from agents.models import Run
from boards import protocol as p
from boards.coordination.models.projects import Membership, Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.protocol import TaskStatus


@dataclass
class ProjectSummary:
    project: Project
    role: str
    by_state: dict[str, int] = field(default_factory=dict)  # every state, in the board's order
    last_activity: datetime | None = None
    agents_running: int = 0  # agents with a supervised run still running

    @property
    def total(self) -> int:
        return sum(self.by_state.values())

    @property
    def blocked(self) -> int:
        return self.by_state.get(TaskStatus.BLOCKED, 0)

    @property
    def open_states(self) -> list[tuple[str, int]]:
        """The states that hold tasks, in the board's order (what the list shows)."""
        return [(state, n) for state, n in self.by_state.items() if n]


def project_summaries(user: AbstractBaseUser) -> list[ProjectSummary]:
    """The projects `user` sees (staff: all, as admin), each with its numbers."""
    last = Subquery(
        Event.objects.filter(project=OuterRef("pk")).order_by("-id").values("timestamp")[:1]
    )
    projects = Project.objects.annotate(last_activity=last).order_by("name", "pk")
    if user.is_staff or user.is_superuser:
        rows = [(project, Membership.Role.ADMIN) for project in projects]
    else:
        roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
        rows = [(project, roles[project.pk]) for project in projects.filter(pk__in=roles)]
    if not rows:
        return []
    ids = [project.pk for project, _ in rows]
    counts: dict[int, dict[str, int]] = {}
    for project_id, status, n in (
        Task.objects.filter(project_id__in=ids)
        .values("project_id", "status")
        .annotate(n=Count("id"))
        .values_list("project_id", "status", "n")
        .order_by()
    ):
        counts.setdefault(project_id, {})[status] = n
    running = dict(
        Run.objects.filter(project_id__in=ids, ended__isnull=True)
        .values("project_id")
        .annotate(n=Count("agent_id", distinct=True))
        .values_list("project_id", "n")
        .order_by()
    )
    return [
        ProjectSummary(
            project=project,
            role=role,
            by_state={s: counts.get(project.pk, {}).get(s, 0) for s in p.TASK_STATES},
            last_activity=project.last_activity,
            agents_running=running.get(project.pk, 0),
        )
        for project, role in rows
    ]
