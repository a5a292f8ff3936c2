"""The alert conditions the watcher syncs each sweep (SPEC §9): one function per kind of alert
(`tasks`: a task's; `project`: the project's, its sprints' and agents'), listed once in
`ALERT_CONDITIONS`; plain reads, the sweep acts on them (services.watch).
"""

from __future__ import annotations

from datetime import datetime

from boards.coordination.models.projects import Project, ProjectConfig
from boards.watch.selectors.conditions.base import AlertCondition, escalation_step
from boards.watch.selectors.conditions.project import (
    agent_error,
    breaker_triggered,
    budget_conditions,
    invariant_conditions,
    quota,
    sprint_deadline_conditions,
    stale_checkpoint,
    stale_pause,
    stalled_run_conditions,
)
from boards.watch.selectors.conditions.tasks import (
    approaching_limits,
    awaiting_approval,
    blocked,
    immediate_discoveries,
    integration_failed,
    lease_expired,
    review_lease_expired,
    state_timeout_conditions,
    task_health_conditions,
)


def alert_conditions(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """Every alert condition that holds in `project` at `now`: one function per kind of alert
    (`ALERT_CONDITIONS`, in the order the sweep syncs them), as the breaker has one per
    pattern."""
    found: list[AlertCondition] = []
    for condition in ALERT_CONDITIONS:
        found += condition(project, now, config)
    return found


# Each kind of alert, in the order the sweep syncs them (alert_conditions).
ALERT_CONDITIONS = (
    lease_expired,
    review_lease_expired,
    blocked,
    awaiting_approval,
    integration_failed,
    approaching_limits,
    immediate_discoveries,
    task_health_conditions,
    state_timeout_conditions,
    stale_checkpoint,
    sprint_deadline_conditions,
    stalled_run_conditions,
    breaker_triggered,
    stale_pause,
    quota,
    budget_conditions,
    agent_error,
)

__all__ = [
    "ALERT_CONDITIONS",
    "AlertCondition",
    "alert_conditions",
    "escalation_step",
    "invariant_conditions",
]
