"""Two identical retries of one write at the same instant (docs/decisions.md "Idempotency-Key").

Each retry runs in its own thread on its own PostgreSQL connection. The unique (agent, key)
index makes the second wait until the first commits, then replay its answer: the write is
applied once and both callers get the same answer.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Discovery
from boards.protocol import Action
from tests.api.helpers import api_base, bearer, key_for
from tests.concurrency.conftest import run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

FINDING = {"description": "Two retries, one finding", "severity": "low"}


def test_two_identical_retries_at_once_apply_once_and_answer_alike():
    world = World(now=timezone.now() - timedelta(minutes=2))
    plain = key_for(world.coder)
    path = f"{api_base(world.project.slug)}/discoveries"

    def retry():
        response = bearer(plain).post(path, FINDING, format="json", HTTP_IDEMPOTENCY_KEY="same")
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    outcomes = run_together(retry, retry)

    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    (status_a, body_a, replay_a), (status_b, body_b, replay_b) = (o.value for o in outcomes)
    assert status_a == status_b == 201
    assert body_a == body_b
    assert sorted([replay_a, replay_b], key=str) == [None, "true"]
    assert Discovery.objects.filter(project=world.project).count() == 1
    assert Event.objects.filter(project=world.project, action=Action.DISCOVERED).count() == 1


def test_two_identical_claims_at_once_claim_once():
    world = World(now=timezone.now() - timedelta(minutes=2))
    world.unclaimed("T1")
    plain = key_for(world.coder)
    path = f"{api_base(world.project.slug)}/tasks/T1/claim"

    def retry():
        response = bearer(plain).post(
            path, {"base_commit": "c0ffee01"}, format="json", HTTP_IDEMPOTENCY_KEY="claim-T1"
        )
        return response.status_code, response.json()

    outcomes = run_together(retry, retry)

    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    (status_a, body_a), (status_b, body_b) = (o.value for o in outcomes)
    assert status_a == status_b == 200
    assert body_a == body_b
    assert body_a["task"]["assigned_to"] == "coder-1"
    claimed = Event.objects.filter(project=world.project, task__key="T1", action=Action.CLAIMED)
    assert claimed.count() == 1
