"""Agent reads: identities of a project and the key a bearer token presents."""

from __future__ import annotations

import hmac
from datetime import datetime, timedelta

from django.db.models import QuerySet

from agents.models import Agent, AgentKey, Run
from boards.models import Project
from boards.selectors.access import in_project


def agent_get(*, project: Project, agent_id: str) -> Agent:
    return in_project(
        Agent.objects.select_related("current_task"), project, what="agent", agent_id=agent_id
    )


def agent_list(*, project: Project) -> QuerySet[Agent]:
    return Agent.objects.filter(project=project).select_related("current_task")


def key_get(*, project: Project, prefix: str) -> AgentKey:
    return in_project(AgentKey.objects.select_related("agent"), project, what="key", prefix=prefix)


def agent_key_lookup(*, plain: str) -> AgentKey | None:
    """The active key for a presented bearer token, or None (unknown, malformed or revoked)."""
    parts = plain.split("_", 2)
    if len(parts) != 3 or parts[0] != "liza" or len(parts[1]) != AgentKey.PREFIX_LEN:
        return None
    key = (
        # The project and its config too: every agent request needs both (ProjectView).
        AgentKey.objects.select_related("agent", "agent__project", "agent__project__config")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, AgentKey.hash(plain)):
        return None
    return key


def run_list(
    *, project: Project, task: str | None = None, agent_id: str | None = None
) -> QuerySet[Run]:
    """The project's runs, newest first (a task's, an agent's)."""
    rows = Run.objects.filter(project=project).select_related("agent", "task")
    if task:
        rows = rows.filter(task__key=task)
    if agent_id:
        rows = rows.filter(agent__agent_id=agent_id)
    return rows.order_by("-started", "-id")


def run_get(*, project: Project, run_id: int | str) -> Run:
    return in_project(Run.objects.select_related("agent", "task"), project, pk=run_id)


def recent_crashes(*, agent: Agent, window: timedelta, now: datetime) -> list[Run]:
    """The runs of `agent` that crashed (exit neither 0 nor 42, not stopped by the supervisor)
    and ended within `window` before `now`, newest first: a crash loop is three in five
    minutes (seed 000 MAM contract), the rule `liza supervise` stops on and the watcher reads."""
    rows = (
        Run.objects.filter(agent=agent, ended__gt=now - window, ended__lte=now, stopped_by="")
        .exclude(exit_code__in=(0, 42))
        .exclude(exit_code__isnull=True)
        .select_related("task")
        .order_by("-ended", "-id")
    )
    return list(rows)
