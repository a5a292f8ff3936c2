"""An operation's people are its service's declaration (boards/operations/base.py): the board's
form gate and the API's role matrix read `Operation.role`, the service enforces the same value.
Its runner refuses a superseded session's process once for every agent operation, and hands a
`fenced` service the generation to ask again on the row it locks."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from agents.models import Run
from agents.services import agent_leave, agent_register
from boards.coordination.models.records import Event
from boards.coordination.services.authority import PEOPLE
from boards.errors import NotRegistered
from boards.operations import OPERATIONS, operation
from boards.operations.base import PROJECT, SITE, Operation
from tests.lifecycle import World


@pytest.mark.parametrize("op", list(OPERATIONS.values()), ids=lambda op: op.name)
def test_an_operations_role_is_what_its_service_declares(op: Operation):
    if op.target == SITE:
        assert op.role is None  # site staff, not a project role (the service checks staff)
    else:
        assert op.role == op.service.people == PEOPLE[op.service.__name__]


def test_an_operation_on_a_service_that_declares_no_people_is_refused_at_declaration():
    def task_undeclared(*, project, actor, now) -> None: ...

    with pytest.raises(TypeError, match="task_undeclared"):
        Operation("task_undeclared", task_undeclared, PROJECT, serializers.Serializer)


@pytest.mark.django_db
def test_the_runner_refuses_every_agent_operation_of_a_superseded_session():
    """`run_start` fences nothing itself: the runner's check is all that refuses it. Session 1
    of coder-1 left and the id registered again (session 2): session 1's still-running agent
    starts no run as session 2, the refusal is logged, and session 2's does start one."""
    world = World()
    agent_leave(project=world.project, agent=world.coder, now=world.tick())
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=world.tick())
    start = operation("run_start")
    assert not getattr(start.service, "fenced", False)

    with pytest.raises(NotRegistered) as refused:
        start.run(target=world.project, actor=world.coder, now=world.tick(), data={}, generation=1)

    assert refused.value.message.startswith("session 1 of coder-1 was superseded by session 2")
    assert not Run.objects.filter(agent=world.coder).exists()
    event = Event.objects.get(project=world.project, action="run_start_failed")
    assert (event.actor_id, event.data["code"]) == ("coder-1", "not_registered")
    for generation in (2, None):  # its own session's, or none sent (an older client)
        start.run(
            target=world.project,
            actor=world.coder,
            now=world.tick(),
            data={},
            generation=generation,
        )
    assert Run.objects.filter(agent=world.coder).count() == 2


@pytest.mark.django_db
def test_the_runner_hands_a_fenced_service_the_generation(monkeypatch):
    """`agent_leave` asks again on the row it locks: the runner's read of the agent may be
    older than a registration that commits before the lock (the hot path's key cache)."""
    world = World()
    stale = world.coder  # read before the id registers again, as a cached key's agent
    agent_leave(project=world.project, agent=world.coder, now=world.tick())
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=world.tick())
    leave = operation("agent_leave")
    assert leave.service.fenced

    with pytest.raises(NotRegistered):
        leave.run(target=world.project, actor=stale, now=world.tick(), data={}, generation=1)

    assert world.coder.left_at is None  # session 2 lives on
