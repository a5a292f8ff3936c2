"""Every operation of the protocol and of human oversight, declared once (STYLE.md).

An `Operation` binds a service (boards.services, agents.services) to the row it acts on, the
input it accepts (one serializer of `boards.operations.inputs`, whoever sends it) and the words
that report its success. The adapters only translate in and out:

- the REST API (boards.api.operations) turns each into an endpoint: JSON body → input →
  service → the row's representation, errors through the one envelope;
- the board's HTML actions (boards.board.web.actions) turn a form POST into the same input, and a
  success into a flash message, a refusal into the page again with the error;
- the Django admin's actions (boards.admin) run the same operation on each selected row.

None of them checks a role or a state itself: the service does, once.

The type and how it runs are `base.py`; the declarations, one module a group: `planning.py`
(the planner), `work.py` (the coder, its supervisor, the code reviewer), `oversight.py` (records
and human oversight of tasks), `project.py` (sprints, goals, the project, agents and keys).
"""

from __future__ import annotations

from typing import Any

from agents.selectors import agent_get, key_get, run_get
from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Discovery
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.breaker import breaker_status
from boards.coordination.selectors.sprints import goal_current, goal_get, sprint_current, sprint_get
from boards.coordination.selectors.tasks import task_get
from boards.errors import NotFound
from boards.operations.base import (
    AGENT,
    ALERT,
    BREAKER,
    DISCOVERY,
    GOAL,
    KEY,
    PROJECT,
    RUN,
    SPRINT,
    TASK,
    Operation,
)
from boards.operations.oversight import OVERSIGHT
from boards.operations.planning import PLANNING
from boards.operations.project import PROJECT_OPERATIONS
from boards.operations.work import WORK

__all__ = ["OPERATIONS", "Operation", "operation", "resolve_target"]

OPERATIONS: dict[str, Operation] = {
    op.name: op for op in [*PLANNING, *WORK, *OVERSIGHT, *PROJECT_OPERATIONS]
}


def operation(name: str) -> Operation:
    return OPERATIONS[name]


def resolve_target(project, target: str, names: dict[str, str]) -> Any:
    """The row an operation acts on, from the names in its URL (404 for missing or foreign).

    A sprint or goal named by its id is that one; unnamed (the API's `sprint/abort`), it is the
    project's current one — the open sprint or goal, else the latest (SPEC §13: a wrong state
    is then a 409 `invalid_transition`, and 404 only when the project never had one).
    """
    if target == PROJECT:
        return project
    if target == TASK:
        return task_get(project=project, key=names["key"])
    if target == SPRINT:
        if "sprint_id" in names:
            return sprint_get(project=project, sprint_id=names["sprint_id"])
        row = sprint_current(project=project)
    elif target == GOAL:
        if "goal_id" in names:
            return goal_get(project=project, goal_id=names["goal_id"])
        row = goal_current(project=project)
    elif target == DISCOVERY:
        return in_project(Discovery.objects.all(), project, disc_id=names["disc_id"])
    elif target == ALERT:
        return in_project(Alert.objects.all(), project, pk=names["alert_id"])
    elif target == BREAKER:
        return breaker_status(project=project)
    elif target == AGENT:
        return agent_get(project=project, agent_id=names["agent_id"])
    elif target == KEY:
        return key_get(project=project, prefix=names["prefix"])
    elif target == RUN:
        return run_get(project=project, run_id=names["run_id"])
    else:
        raise ValueError(target)
    if row is None:
        raise NotFound()
    return row
