"""Row locks, in one order everywhere (so two services never wait on each other in a circle):
the project row (when a service serializes per project), then agent rows (by primary key),
then task rows, then review rows. A service that must lock an agent after a task does so
NOWAIT and treats "busy" as a conflict to retry (docs/architecture.md "Lock order")."""

from __future__ import annotations

from collections.abc import Iterable

from agents.models import Agent
from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.audit import Attempt
from boards.coordination.services.authority import require_lease_holder, require_not_lost
from boards.coordination.services.edges import require_task_status


def lock_task(task: Task) -> Task:
    """Re-read `task` under a row lock (a no-op lock on SQLite, where IMMEDIATE serializes)."""
    return rows.get_locked(Task, task.pk)


def lock_task_in(task: Task, expected: Iterable[str], *, to: str, attempt: Attempt) -> Task:
    """`task` locked, then checked to be in one of the `expected` states under that lock (a
    status read before the lock may be stale), else the attempt is refused towards `to`."""
    task = lock_task(task)
    require_task_status(task, expected, to=to, attempt=attempt)
    return task


def lock_agent(agent: Agent) -> Agent:
    return rows.get_locked(Agent, agent.pk)


def lock_project(project: Project) -> Project:
    return Project.objects.select_for_update().get(pk=project.pk)


def agent_row(project: Project, agent_id: str) -> Agent | None:
    """The agent `agent_id` of `project`, locked (None for an id with no agent row)."""
    if not agent_id:
        return None
    return (
        Agent.objects.select_for_update(of=("self",))
        .filter(project=project, agent_id=agent_id)
        .first()
    )


def config_for_update(project: Project) -> ProjectConfig:
    config = config_of(project)
    if config.pk is None:
        config.save()  # a project made before configs existed: seed 002's defaults
    return config


def lock_own_claim(
    attempt: Attempt, agent: Agent, task: Task, *, to: str, config: ProjectConfig
) -> tuple[Agent, Task]:
    """A coder's operation on the task it works on (submit, block, handoff, pickup): both rows
    locked (the agent first, the lock order), and `task` must still be its live claim — not
    taken from it (`lease_lost`), CLAIMED (else `invalid_transition` towards `to`), under its own
    live lease (`lease_lost`). That order is the answers' precedence; each names `attempt`."""
    agent = lock_agent(agent)
    task = lock_task(task)
    action, now = attempt.action, attempt.now
    require_not_lost(task, agent, action=action, now=now)
    require_task_status(task, [p.TaskStatus.CLAIMED], to=to, attempt=attempt)
    require_lease_holder(task, agent, action=action, now=now, config=config)
    return agent, task
