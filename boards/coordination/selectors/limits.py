"""Enforced limits at claim (issue 24): the board's WIP limit of the CLAIMED column and
`max_concurrent` agents at work per role and per project. One predicate, `admission_refusal`,
read by claims, claim-next, review claims (under the project row's lock, so concurrent claims
are counted one after another) and by `/work` (which then answers "wait").

"At work" is a live lease: a coder's CLAIMED task or a reviewer's open review claim whose lease
is alive (`lease_alive`, grace included). A CLAIMED task whose lease died still fills its WIP
column until it is retried, taken over or blocked: the column counts cards, not agents.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.leases import lease_stale_before
from boards.protocol import TaskStatus


def limits_enforced(config: ProjectConfig) -> bool:
    """Whether a claim must count (and so serialize on the project row): any limit set."""
    return bool(config.max_concurrent) or TaskStatus.CLAIMED in (config.wip_limits or {})


@dataclass(frozen=True)
class LimitRefusal:
    message: str
    limit: str  # "wip:CLAIMED", "max_concurrent:coder", "max_concurrent:project"
    retry_after: int  # seconds: when asking again makes sense (a poll interval)


def _at_work(project: Project, config: ProjectConfig, now: datetime) -> dict[str, int]:
    stale = lease_stale_before(now, config)
    coders = Task.objects.filter(
        project=project, status=TaskStatus.CLAIMED, lease_expires__gte=stale
    ).count()
    reviewers = (
        Review.objects.filter(
            task__project=project,
            closed_at__isnull=True,
            verdict="",
            lease_expires__gte=stale,
        )
        .values("reviewer")
        .distinct()
        .count()
    )
    return {
        Agent.Role.CODER: coders,
        Agent.Role.CODE_REVIEWER: reviewers,
        "project": coders + reviewers,
    }


def admission_refusal(
    *,
    project: Project,
    config: ProjectConfig,
    role: str,
    now: datetime,
    into_column: bool,
) -> LimitRefusal | None:
    """Why a new claim by an agent of `role` would break an enforced limit, or None.

    `into_column`: the claim moves a task into CLAIMED (a first claim, a REJECTED or
    INTEGRATION_FAILED task), so the column's WIP limit applies; a retry or takeover of a task
    already CLAIMED does not add a card."""
    wait = max(1, config.coder_poll_interval)
    wip = (config.wip_limits or {}).get(TaskStatus.CLAIMED)
    if into_column and wip is not None:
        cards = Task.objects.filter(project=project, status=TaskStatus.CLAIMED).count()
        if cards >= wip:
            return LimitRefusal(
                f"the CLAIMED column is at its WIP limit ({cards}/{wip}); wait for a task to "
                "leave it",
                "wip:CLAIMED",
                wait,
            )
    limits = config.max_concurrent or {}
    if not limits:
        return None
    working = _at_work(project, config, now)
    for name in (role, "project"):
        limit = limits.get(name)
        if limit is not None and working[name] >= limit:
            who = "agents" if name == "project" else f"{name}s"
            return LimitRefusal(
                f"max_concurrent {name}: {working[name]}/{limit} {who} already at work; wait "
                "for one to finish",
                f"max_concurrent:{name}",
                wait,
            )
    return None


@dataclass(frozen=True)
class Concurrency:
    name: str  # coder, code_reviewer, project
    at_work: int
    limit: int


def concurrency_shown(
    *, project: Project, config: ProjectConfig, now: datetime
) -> list[Concurrency]:
    """The `max_concurrent` caps the board shows on its agents panel, with how many are at work
    now (the very count claims are refused on); empty when none is set (no query)."""
    limits = config.max_concurrent or {}
    if not limits:
        return []
    working = _at_work(project, config, now)
    return [
        Concurrency(name, working[name], int(limits[name]))
        for name in (Agent.Role.CODER, Agent.Role.CODE_REVIEWER, "project")
        if name in limits
    ]
