"""Enforced limits at claim (issue 24): the rule is
`boards.coordination.selectors.limits.admission_refusal`;
this is where claims ask it, under the project row's lock so that concurrent claims are counted
one after another (no over-admission). The project row comes first in the lock order
(docs/architecture.md "Lock order"), so callers call `admit` before locking any agent or task.
Projects without a limit take no lock and read nothing more.
"""

from __future__ import annotations

from datetime import datetime

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.limits import LimitRefusal, admission_refusal, limits_enforced
from boards.coordination.services.audit import Attempt
from boards.coordination.services.locking import lock_project
from boards.errors import LimitReached


def admission_lock(*, project: Project, config: ProjectConfig) -> bool:
    """Lock the project row when a limit is set (first in the lock order); whether it did."""
    if not limits_enforced(config):
        return False
    lock_project(project)
    return True


def admit(
    *,
    project: Project,
    config: ProjectConfig,
    agent: Agent,
    action: str,
    now: datetime,
    into_column: bool,
    task: Task | None = None,
) -> None:
    """After `admission_lock`: refuse (429 `limit_reached`, exit 11) a claim that would break
    a limit; nothing when none is set."""
    if not limits_enforced(config):
        return
    refused = admission_refusal(
        project=project, config=config, role=agent.role, now=now, into_column=into_column
    )
    if refused is not None:
        raise_limit(refused, project=project, agent=agent, action=action, now=now, task=task)


def wip_full(*, project: Project, config: ProjectConfig, agent: Agent, now: datetime):
    """For claim-next, after `admit(into_column=False)`: the CLAIMED column's refusal when it
    is at its WIP limit (only takeovers and retries of CLAIMED tasks may go on), else None."""
    return admission_refusal(
        project=project, config=config, role=agent.role, now=now, into_column=True
    )


def raise_limit(
    refused: LimitRefusal,
    *,
    project: Project,
    agent: Agent,
    action: str,
    now: datetime,
    task: Task | None = None,
) -> None:
    raise Attempt(project=project, actor=agent, action=action, now=now).refuse(
        LimitReached(
            refused.message,
            {"limit": refused.limit, "retry_after": refused.retry_after},
        ),
        task=task,
    )
