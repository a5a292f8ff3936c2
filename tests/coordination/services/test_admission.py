"""Issue 24: the CLAIMED column's WIP limit and `max_concurrent` per role and per project are
enforced at claim (429 `limit_reached`, exit 11, Retry-After), and `/work` says wait."""

from __future__ import annotations

import pytest
import time_machine

from boards.coordination.models.records import Event
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, tasks
from boards.coordination.services.projects import config_update
from boards.errors import LimitReached, ProtocolValidationError
from tests.api.helpers import agent_client, api_base, assert_envelope

pytestmark = pytest.mark.django_db


def _limits(world, **fields):
    config_update(project=world.project, actor=world.admin, now=world.now, **fields)
    world.project.refresh_from_db()
    world.project.config.refresh_from_db()


def _claim_next(world, coder):
    return tasks.task_claim_next(
        project=world.project, agent=world.agent(coder), now=world.tick(), base_commit="b1"
    )


def test_the_claimed_columns_wip_limit_refuses_a_claim_and_work_says_wait(world):
    for key in ("T-1", "T-2", "T-3"):
        world.unclaimed(key)
    _limits(world, wip_limits={"CLAIMED": 2})
    assert _claim_next(world, "coder-1").key == "T-1"
    assert _claim_next(world, "coder-2").key == "T-2"
    with pytest.raises(LimitReached) as refused:
        _claim_next(world, "coder-3")
    assert refused.value.status_code == 429 and refused.value.exit == 11
    assert refused.value.details["limit"] == "wip:CLAIMED"
    assert "WIP limit (2/2)" in refused.value.message
    with pytest.raises(LimitReached):  # by name too
        tasks.task_claim(
            task=world.task("T-3"), agent=world.agent("coder-3"), now=world.now, base_commit="b"
        )
    answer = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-3"), now=world.now
    )
    assert (answer["work"], answer["exit"]) == (False, None)
    assert "WIP limit" in answer["reason"]
    assert answer["retry_after"] == config_of(world.project).coder_poll_interval
    # The refusal is in the log, as every refusal.
    assert (
        Event.objects.filter(
            project=world.project, actor_id="coder-3", outcome="rejected", action="claim_failed"
        ).exists()
        or Event.objects.filter(project=world.project, outcome="rejected").exists()
    )
    # A card leaves the column: the next claim is admitted.
    world.submit("T-1")
    assert _claim_next(world, "coder-3").key == "T-3"


def test_max_concurrent_per_role_and_per_project(world):
    for key in ("T-1", "T-2", "T-3"):
        world.unclaimed(key)
    world.ready_for_review("R-1", coder="coder-3")
    _limits(world, max_concurrent={"coder": 1, "project": 2})
    # coder-3 holds nothing now (its tasks are in review); coder-1 takes the one coder slot.
    assert _claim_next(world, "coder-1").key == "T-1"
    with pytest.raises(LimitReached) as refused:
        _claim_next(world, "coder-2")
    assert refused.value.details["limit"] == "max_concurrent:coder"
    # A reviewer takes the second project slot; the next reviewer is refused for the project.
    reviews.review_claim(
        task=world.task("R-1"), agent=world.agent("code-reviewer-1"), now=world.tick()
    )
    with pytest.raises(LimitReached) as refused:
        reviews.review_claim(
            task=world.task("R-1"), agent=world.agent("code-reviewer-2"), now=world.tick()
        )
    assert refused.value.details["limit"] == "max_concurrent:project"
    # Its own live claim is handed back whatever the limits.
    assert _claim_next(world, "coder-1").key == "T-1"


def test_the_limits_are_validated_and_the_http_answer_has_retry_after(world):
    with pytest.raises(ProtocolValidationError):
        _limits(world, max_concurrent={"planner": 2})
    with pytest.raises(ProtocolValidationError):
        _limits(world, max_concurrent={"coder": 0})
    world.unclaimed("T-1")
    world.unclaimed("T-2")
    _limits(world, max_concurrent={"coder": 1})
    world.claim("T-1", "coder-1")
    client = agent_client(world.agent("coder-2"))
    with time_machine.travel(world.now, tick=False):
        response = client.post(
            f"{api_base(world.project.slug)}/tasks/claim-next", {"base_commit": "b"}, format="json"
        )
    body = assert_envelope(response, 429, "limit_reached")
    assert body["details"]["exit"] == 11
    assert response["Retry-After"] == str(config_of(world.project).coder_poll_interval)


def test_a_retry_of_its_own_dead_claim_waits_for_max_concurrent_and_work_says_so(world):
    """A coder's own dead claim due for its retry (seed 003) puts one more coder at work, so
    `max_concurrent` refuses it as it refuses new work — and `/work` says wait, as the claim
    would, instead of sending the coder to a refused claim (its WIP column is not in question:
    the task is in CLAIMED already)."""
    for key in ("T-1", "T-2"):
        world.unclaimed(key)
    assert _claim_next(world, "coder-1").key == "T-1"
    config = config_of(world.project)
    world.tick(config.lease_duration + config.lease_grace + int(config.retry_backoff[0]) + 5)
    assert _claim_next(world, "coder-2").key == "T-2"  # the one coder at work now
    _limits(world, max_concurrent={"coder": 1}, wip_limits={"CLAIMED": 2})
    answer = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-1"), now=world.now
    )
    assert (answer["work"], answer["exit"]) == (False, None), answer
    assert "max_concurrent coder: 1/1" in answer["reason"]
    with pytest.raises(LimitReached) as refused:
        _claim_next(world, "coder-1")
    assert refused.value.details["limit"] == "max_concurrent:coder"
    # The other coder's task leaves the column: the retry is admitted, and /work says so first.
    world.submit("T-2")
    answer = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-1"), now=world.now
    )
    assert answer["work"] is True, answer
    assert _claim_next(world, "coder-1").key == "T-1"
