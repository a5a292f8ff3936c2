"""The heartbeat's answer (boards.api.views.heartbeat_answer), written from the rows the service
returns, is HeartbeatSerializer's — the schema the API documents — for every kind of agent: a
coder holding its task, a reviewer holding review leases, an agent with nothing, a stop."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from agents.api.serializers import HeartbeatSerializer
from agents.services import agent_heartbeat
from boards.api.views import heartbeat_answer
from boards.coordination.services.projects import project_pause
from boards.protocol import TaskStatus
from tests.api.helpers import http_start
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


def _serialized(result) -> dict:
    """The answer as HeartbeatView wrote it through the serializer."""
    task = result.task if result.task and result.task.status == TaskStatus.CLAIMED else None
    body = {
        "agent": result.agent,
        "task": task.key if task else None,
        "task_lease_expires": task.lease_expires if task else None,
        "review_leases": {r.task.key: r.lease_expires for r in result.reviews if r.lease_expires},
        "stop": result.stop.code if result.stop else None,
        "exit": 42 if result.stop else None,
    }
    return HeartbeatSerializer(body).data


def _written(result) -> dict:
    task = result.task if result.task and result.task.status == TaskStatus.CLAIMED else None
    return heartbeat_answer(result.agent, task, result.reviews, result.stop)


def _json(value) -> str:
    return json.dumps(value, cls=JSONEncoder, sort_keys=True)


@pytest.mark.parametrize("who", ["holding coder", "reviewer", "idle coder", "paused"])
def test_the_written_heartbeat_answer_is_the_serializers(who):
    world = World(now=http_start())
    if who == "reviewer":
        world.ready_for_review("T-1")
        world.claim_review("T-1")
        agent = world.reviewer
    elif who == "idle coder":
        agent = world.agent("coder-2")
    else:
        world.claimed("T-1")
        agent = world.coder
    if who == "paused":
        project_pause(project=world.project, actor=world.admin, reason="x", now=timezone.now())
    result = agent_heartbeat(agent=agent, now=timezone.now(), context_percent=40)
    if who == "paused":
        assert result.stop is not None
    written, serialized = _written(result), _serialized(result)
    assert written == serialized
    assert _json(written) == _json(serialized)  # and so the same JSON
    if who in ("holding coder", "paused"):
        assert written["task"] == "T-1" and written["agent"]["current_task"] == "T-1"
    if who == "reviewer":
        assert list(written["review_leases"]) == ["T-1"]
