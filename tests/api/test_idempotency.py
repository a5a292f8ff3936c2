"""`Idempotency-Key` on agent writes (docs/decisions.md): a retry replays the first answer.

Same key, same agent, same request: the stored status and body come back and nothing is applied
twice. The same key on another request is a 422 envelope. Writes without a key are unchanged.
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from agents.models import IdempotentRequest
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Discovery
from tests.api.helpers import agent_client, api_base, assert_envelope, session_client
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

FINDING = {"description": "The parser drops trailing commas", "severity": "medium"}


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(minutes=2))


def post(client, path, body, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(path, body, format="json", **headers)


def test_a_retried_write_replays_its_first_answer_and_is_applied_once(world):
    client = agent_client(world.coder)
    path = f"{api_base(world.project.slug)}/discoveries"

    first = post(client, path, FINDING, key="k-1")
    again = post(client, path, FINDING, key="k-1")

    assert first.status_code == 201
    assert again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Discovery.objects.filter(project=world.project).count() == 1


def test_writes_without_a_key_or_with_another_key_are_applied_each_time(world):
    client = agent_client(world.coder)
    path = f"{api_base(world.project.slug)}/discoveries"

    post(client, path, FINDING)
    post(client, path, FINDING)
    post(client, path, FINDING, key="a")
    post(client, path, FINDING, key="b")

    assert Discovery.objects.filter(project=world.project).count() == 4


def test_a_refusal_is_replayed_too_and_its_refused_event_written_once(world):
    world.claimed("T1", coder="coder-2")
    client = agent_client(world.coder)
    path = f"{api_base(world.project.slug)}/tasks/T1/claim"
    refused = Event.objects.filter(project=world.project, outcome=Event.Outcome.REJECTED)
    before = refused.count()

    first = post(client, path, {"base_commit": "c0ffee01"}, key="claim-T1")
    again = post(client, path, {"base_commit": "c0ffee01"}, key="claim-T1")

    assert first.status_code == 409
    assert again.status_code == 409
    assert again.json() == first.json()
    assert refused.count() == before + 1


def test_the_same_key_for_another_body_or_path_is_refused_and_nothing_applied(world):
    client = agent_client(world.coder)
    base = api_base(world.project.slug)
    post(client, f"{base}/discoveries", FINDING, key="k-1")

    other_body = post(client, f"{base}/discoveries", {**FINDING, "severity": "high"}, key="k-1")
    other_path = post(
        client,
        f"{base}/anomalies",
        {"type": "other", "details": {"note": "x"}},
        key="k-1",
    )

    for response in (other_body, other_path):
        error = assert_envelope(response, 422, "idempotency_key_reused")
        assert error["details"]["exit"] == 3
        assert error["details"]["field"] == "Idempotency-Key"
    assert Discovery.objects.filter(project=world.project).count() == 1
    assert not world.project.anomalies.exists()


def test_keys_belong_to_one_agent(world):
    path = f"{api_base(world.project.slug)}/discoveries"

    post(agent_client(world.coder), path, FINDING, key="shared")
    second = post(agent_client(world.agent("coder-2")), path, FINDING, key="shared")

    assert second.status_code == 201
    assert "Idempotent-Replayed" not in second
    assert Discovery.objects.filter(project=world.project).count() == 2


def test_a_key_is_remembered_for_24_hours_only(world):
    client = agent_client(world.coder)
    path = f"{api_base(world.project.slug)}/discoveries"
    post(client, path, FINDING, key="daily")

    with time_machine.travel(timezone.now() + timedelta(hours=23), tick=False):
        replayed = post(client, path, FINDING, key="daily")
    with time_machine.travel(timezone.now() + timedelta(hours=25), tick=False):
        fresh = post(client, path, FINDING, key="daily")

    assert replayed["Idempotent-Replayed"] == "true"
    assert fresh.status_code == 201
    assert "Idempotent-Replayed" not in fresh
    assert Discovery.objects.filter(project=world.project).count() == 2
    assert IdempotentRequest.objects.filter(agent=world.coder, key="daily").count() == 1


@pytest.mark.parametrize("key", ["", "   ", "x" * 256, "clé"])
def test_a_malformed_key_is_a_400_naming_the_header(world, key):
    response = post(
        agent_client(world.coder),
        f"{api_base(world.project.slug)}/discoveries",
        FINDING,
        key=key,
    )

    error = assert_envelope(response, 400, "validation_error")
    assert "Idempotency-Key" in error["details"]["fields"]
    assert not Discovery.objects.filter(project=world.project).exists()


def test_humans_are_not_subject_to_keys(world):
    client = session_client(world.admin)
    path = f"{api_base(world.project.slug)}/discoveries"

    first = post(client, path, FINDING, key="k")
    again = post(client, path, FINDING, key="k")

    assert first.status_code == again.status_code == 201
    assert "Idempotent-Replayed" not in again
    assert Discovery.objects.filter(project=world.project).count() == 2
    assert not IdempotentRequest.objects.exists()


def test_the_purge_command_forgets_keys_older_than_a_day_only(world):
    # Two agents: an agent's own next keyed write would already drop its expired keys.
    path = f"{api_base(world.project.slug)}/discoveries"
    with time_machine.travel(timezone.now() - timedelta(hours=25), tick=False):
        post(agent_client(world.agent("coder-2")), path, FINDING, key="old")
    post(agent_client(world.coder), path, FINDING, key="new")
    out = io.StringIO()

    call_command("liza_purge_idempotency", stdout=out)

    assert "1 expired" in out.getvalue()
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["new"]
