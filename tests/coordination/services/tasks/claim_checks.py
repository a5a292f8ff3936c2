"""What claim-next checks before it claims, on the claim property test's random boards
(test_claims_sql.py; review claim-next's, test_review_claims_sql.py, with `REVIEW_CHECKS`):
stop work, budgets at their edge, the claimer's availability (failures on each side of the
error window, a clear, overloaded, disabled), its role, the enforced `max_concurrent` limits.
Each is off on most boards, so that claims still happen."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import strategies as st

from agents.models import Agent, Budget, Run, RunUsage
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.availability import ERROR_WINDOW
from boards.protocol import Action
from tests.factories import T0

SPENT = 100  # tokens of usage the board's budgets count
EDGE = timedelta(seconds=ERROR_WINDOW)
US = timedelta(microseconds=1)

FIELDS = dict(
    {
        "paused": st.sampled_from((False,) * 7 + (True,)),
        "sprint": st.sampled_from(
            (None, None, "IN_PROGRESS", "IN_PROGRESS", "CHECKPOINT", "ABORTED")
        ),
        # (scope, limit - spent): exhausted at 0 and below (issue 24: 100 % spends it).
        "budgets": st.sampled_from(
            (
                (),
                (),
                (),
                (("project", 1),),
                (("project", 0),),
                (("agent", 0),),
                (("task", 0),),
                (("task", -1), ("project", 1)),
                (("goal", 0),),
                (("sprint", 0),),
            )
        ),
        # The claimer's failures, seconds before `now` (the window excludes its far end).
        "expiries": st.sampled_from(
            ((), (), (), (10,), (10, 100, 200), (10, 100, "edge"), (10, 100, "in"))
        ),
        "crashes": st.sampled_from(((), (), (), (5, 50, 150))),
        "cleared": st.sampled_from((None, None, None, 150)),
        "overloaded": st.sampled_from((False,) * 7 + (True,)),
        "enabled": st.sampled_from((True,) * 9 + (False,)),
        "role": st.sampled_from(("coder",) * 9 + ("code_reviewer",)),
        "max_concurrent": st.sampled_from(({},) * 5 + ({"coder": 1}, {"project": 2})),
    }
)
CHECKS = st.fixed_dictionaries(FIELDS)
# The same for a reviewer (the review claims' property test): its role, its role's limit.
REVIEW_CHECKS = st.fixed_dictionaries(
    {
        **FIELDS,
        "role": st.sampled_from(("code_reviewer",) * 9 + ("coder",)),
        "max_concurrent": st.sampled_from(({},) * 5 + ({"code_reviewer": 1}, {"project": 2})),
    }
)

NO_CHECKS = {
    "paused": False,
    "sprint": None,
    "budgets": (),
    "expiries": (),
    "crashes": (),
    "cleared": None,
    "overloaded": False,
    "enabled": True,
    "role": "coder",
    "max_concurrent": {},
}


def checks_of(**changes) -> dict:
    return {**NO_CHECKS, **changes}


def project_checks(project: Project, checks: dict, now: datetime) -> dict:
    """The project's side before its tasks: paused, its sprint; the config's limits are the
    caller's. Answers the goal in progress and the sprint (None when there is none)."""
    if checks["paused"]:
        Project.objects.filter(pk=project.pk).update(paused_at=now - EDGE, paused_reason="paused")
    goal = Goal.objects.filter(project=project, status="IN_PROGRESS").first()
    sprint = None
    if checks["sprint"] is not None:
        sprint = Sprint.objects.create(
            project=project, sprint_id="sprint-1", goal=goal, started=T0, status=checks["sprint"]
        )
    return {"goal": goal, "sprint": sprint}


def agent_checks(claimer: Agent, tasks: list[Task], checks: dict, now: datetime, made: dict):
    """The claimer's side: availability, role, enabled; the budgets with their usage."""
    project = claimer.project
    Agent.objects.filter(pk=claimer.pk).update(
        role=checks["role"],
        enabled=checks["enabled"],
        overloaded=checks["overloaded"],
        error_cleared_at=None
        if checks["cleared"] is None
        else now - timedelta(seconds=checks["cleared"]),
    )
    for at in checks["expiries"]:
        ago = {"edge": EDGE, "in": EDGE - US}.get(at) or timedelta(seconds=at)
        _event(
            project,
            now - ago,
            Action.LEASE_EXPIRED,
            "system",
            "watcher",
            {"agent": claimer.agent_id},
        )
    for at in checks["crashes"]:
        _event(
            project,
            now - timedelta(seconds=at),
            Action.AGENT_CRASHED,
            "agent",
            claimer.agent_id,
            {},
        )
    if not checks["budgets"]:
        return
    run = Run.objects.create(project=project, agent=claimer, task=tasks[0], started=T0)
    RunUsage.objects.create(
        project=project,
        run=run,
        agent=claimer,
        task=tasks[0],
        sprint=made["sprint"] if made["sprint"] and made["sprint"].status != "ABORTED" else None,
        goal=tasks[0].goal or made["goal"],
        input_tokens=SPENT,
        recorded_at=T0,
    )
    goal = tasks[0].goal or made["goal"]
    for scope, offset in checks["budgets"]:
        subject = {
            "project": ("", {}),
            "agent": (claimer.agent_id, {"agent": claimer}),
            "task": (tasks[0].key, {"task": tasks[0]}),
            "goal": (goal.goal_id if goal else "", {"goal": goal}),
            "sprint": ("sprint-1", {"sprint": made["sprint"]}),
        }[scope]
        if None in subject[1].values():
            continue
        Budget.objects.create(
            project=project,
            scope=scope,
            subject=subject[0],
            limit_tokens=SPENT + offset,
            updated_at=T0,
            **subject[1],
        )


def _event(project, at, action, kind, actor, data) -> None:
    Event.objects.create(
        project=project,
        timestamp=at,
        actor_kind=kind,
        actor_id=actor,
        action=action,
        outcome="applied",
        detail=str(action),
        data=data,
    )
