"""`/work` for a coder whose only work waits on a dependency (seed 000 "Exit Code 0
Semantics", `selectors.tasks.work_may_still_come`): not done, keep polling. The other boards
of the rule are in test_tasks_role_complete.py."""

from __future__ import annotations

import pytest

from tests.api.helpers import agent_client, api_base, http_goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


def test_a_coder_is_not_done_while_an_unclaimed_task_waits_on_a_dependency(world):
    world.claimed("t1", coder="coder-1")
    world.unclaimed("t2", depends_on=["t1"])
    work = agent_client(world.agent("coder-2")).get(f"{api_base(world.project.slug)}/work").json()
    assert work["work"] is False
    assert work["exit"] is None  # t2 will be claimable once t1 merges: keep polling
    assert work["retry_after"] == 30
