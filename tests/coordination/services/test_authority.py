"""Who may intervene as a human (services.authority): every human-only action on a task is
refused to agents, viewers and members (SPEC §7, §12; seed 004), site staff act as admins.

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import PermissionDenied

from agents.services import agent_set_enabled
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Discovery
from boards.coordination.services import projects, records, reviews, tasks
from boards.coordination.services.actors import SYSTEM
from tests.coordination.services.helpers import (
    _awaiting,
    _immediate,
    goal_world,
    row_snapshot,
)
from tests.factories import ProjectFactory, member
from tests.lifecycle import World
from tests.module_rows import shared_rows

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# who may intervene
# ---------------------------------------------------------------------------------------------


def _interventions(world):
    """Each human-only action on a task that it would otherwise succeed on."""
    return {
        "release_claim": lambda actor: tasks.task_release_claim(
            task=world.task("t-claimed"), actor=actor, reason="Stuck", now=world.tick()
        ),
        "cancel": lambda actor: tasks.task_cancel(
            task=world.task("t-claimed"), actor=actor, reason="Not needed", now=world.tick()
        ),
        "suspend": lambda actor: tasks.task_suspend(
            task=world.task("t-claimed"), actor=actor, reason="Hold", now=world.tick()
        ),
        "approve": lambda actor: reviews.task_human_approve(
            task=world.task("t-gated"), actor=actor, now=world.tick()
        ),
        "reject": lambda actor: reviews.task_human_reject(
            task=world.task("t-gated"), actor=actor, reason="No", now=world.tick()
        ),
        "limits": lambda actor: tasks.task_set_limits(
            task=world.task("t-claimed"), actor=actor, now=world.tick(), priority=1
        ),
        "pause": lambda actor: projects.project_pause(
            project=world.project, actor=actor, reason="Hold", now=world.tick()
        ),
        "config": lambda actor: projects.config_update(
            project=world.project, actor=actor, now=world.tick(), max_review_cycles=3
        ),
        "convert": lambda actor: records.discovery_triage(
            discovery=Discovery.objects.get(project=world.project),
            actor=actor,
            decision="convert",
            task={"key": "t-new"},
            now=world.tick(),
        ),
        "disable": lambda actor: agent_set_enabled(
            agent=world.agent("coder-2"), actor=actor, enabled=False, now=world.tick()
        ),
    }


ACTIONS = (
    "release_claim",
    "cancel",
    "suspend",
    "approve",
    "reject",
    "limits",
    "pause",
    "config",
    "convert",
    "disable",
)


@pytest.fixture(scope="class")
def intervention_world(django_db_setup, django_db_blocker) -> Iterator[World]:
    """A claimed task, a task awaiting a human and a discovery, built once for the 60 refused
    interventions; each refusal, and all it writes, is rolled back after its test
    (tests/module_rows.py). Class-scoped: the rows are gone before the module's
    other tests (the cross-project inbox counts every project's)."""
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            world = goal_world()
            world.claimed("t-claimed")
            _awaiting(world, "t-gated", coder="coder-2")
            _immediate(world)
        yield world


class TestRefusedInterventions:
    """The refusals share one world (`intervention_world`)."""

    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize(
        "who", ["viewer", "member", "other_admin", "planner", "coder", "system"]
    )
    def test_only_admins_of_the_project_intervene(self, db, intervention_world, action, who):
        world = intervention_world
        actor = {
            "viewer": lambda: member(world.project, "viewer"),
            "member": lambda: member(world.project, "member"),
            "other_admin": lambda: member(ProjectFactory(), "admin"),
            "planner": lambda: world.planner,
            "coder": lambda: world.coder,
            "system": lambda: SYSTEM,
        }[who]()

        def rows() -> dict:
            return {
                "claimed": row_snapshot(world.task("t-claimed")),
                "gated": row_snapshot(world.task("t-gated")),
                "project": row_snapshot(world.project),
                "config": row_snapshot(world.project.config),
                "discovery": row_snapshot(Discovery.objects.get(project=world.project)),
                "coder-2": row_snapshot(world.agent("coder-2")),
            }

        before = rows()
        events = Event.objects.filter(project=world.project).count()

        with pytest.raises(PermissionDenied):
            _interventions(world)[action](actor)

        assert rows() == before
        # A role refusal is logged like every other refusal (one rejected attempt, nothing else).
        new = Event.objects.filter(project=world.project).order_by("id")[events:]
        assert [(e.outcome, e.data["code"], e.action.endswith("_failed")) for e in new] == [
            (Event.Outcome.REJECTED, "permission_denied", True)
        ]


def test_site_staff_act_as_admins(world):
    world.unclaimed("t1")
    staff = member(ProjectFactory(), "viewer", is_staff=True)
    task = tasks.task_suspend(task=world.task("t1"), actor=staff, reason="Hold", now=world.tick())
    assert task.suspended_by == staff.username
