"""Issue 24: enforced limits hold under concurrent claims — 16 coders on their own PostgreSQL
connections claim at one instant; the project row's lock counts them one after another, so no
more are admitted than the limit (no over-admission), and every other gets `limit_reached`."""

from __future__ import annotations

import pytest

from agents.models import Agent
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.services.tasks import task_claim_next
from tests.concurrency.conftest import run_together
from tests.factories import register
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

AGENTS = 16


def _world(limits: dict) -> tuple[World, list[str]]:
    world = World()
    coders = [f"coder-{i}" for i in range(1, AGENTS + 1)]
    for agent_id in coders[3:]:
        register(world.project, agent_id, now=world.now)
    for i in range(AGENTS):
        world.unclaimed(f"T-{i}")
    ProjectConfig.objects.filter(project=world.project).update(**limits)
    return world, coders


def _race(world: World, coders: list[str]):
    now = world.tick()

    def claim(agent_id):
        # Each thread reads its own rows (the config included), as each request does.
        agent = Agent.objects.select_related("project").get(
            project=world.project, agent_id=agent_id
        )
        return task_claim_next(project=agent.project, agent=agent, now=now, base_commit="b")

    return run_together(*(lambda a=a: claim(a) for a in coders))


@pytest.mark.parametrize(
    ("limits", "admitted", "code"),
    [
        ({"wip_limits": {"CLAIMED": 5}}, 5, "limit_reached"),
        ({"max_concurrent": {"coder": 4}}, 4, "limit_reached"),
        ({"max_concurrent": {"project": 3}, "wip_limits": {"CLAIMED": 10}}, 3, "limit_reached"),
    ],
)
def test_sixteen_coders_claiming_at_once_are_admitted_up_to_the_limit(limits, admitted, code):
    world, coders = _world(limits)
    outcomes = _race(world, coders)
    errors = [o.error for o in outcomes if not o.ok]
    got = [o.value for o in outcomes if o.ok and o.value is not None]
    assert len(got) == admitted, (got, errors)
    assert len({t.key for t in got}) == admitted
    assert {getattr(e, "code", repr(e)) for e in errors} == {code}, errors
    assert len(errors) == AGENTS - admitted
    claimed = Task.objects.filter(project=world.project, status="CLAIMED").count()
    assert claimed == admitted


def test_without_limits_all_sixteen_are_admitted():
    world, coders = _world({})
    outcomes = _race(world, coders)
    assert all(o.ok and o.value is not None for o in outcomes), [o.error for o in outcomes]
