"""The event log's writes (boards.coordination.services.audit): an attempt's event says what
`record_event` would, and a refusal's event names its attempt."""

from __future__ import annotations

import inspect
import typing

import pytest

from boards.coordination.models.records import Event
from boards.coordination.services.audit import Attempt, EventFields, record_event
from boards.errors import Conflict
from boards.protocol import TaskStatus

pytestmark = pytest.mark.django_db


def test_an_attempt_passes_on_exactly_the_fields_record_event_takes_besides_the_attempt():
    parameters = set(inspect.signature(record_event).parameters)
    attempt = {"project", "actor", "action", "now"}
    assert set(typing.get_type_hints(EventFields)) == parameters - attempt - {"detail"}


def test_an_attempts_event_carries_its_project_actor_time_and_every_field_given(world):
    world.claimed("task-1")
    task = world.task("task-1")
    now = world.tick()
    attempt = Attempt(world.project, world.coder, "task_block", now)

    event = attempt.record(
        action="blocked",
        task=task,
        from_status=TaskStatus.CLAIMED,
        to_status=TaskStatus.BLOCKED,
        detail="waiting on  the\nAPI",
        data={"reason": "api"},
    )

    event = Event.objects.get(pk=event.pk)
    assert (event.project, event.actor_id, event.timestamp) == (world.project, "coder-1", now)
    assert (event.action, event.task, event.outcome) == ("blocked", task, Event.Outcome.APPLIED)
    assert (event.from_status, event.to_status) == (TaskStatus.CLAIMED, TaskStatus.BLOCKED)
    assert (event.detail, event.data) == ("waiting on the API", {"reason": "api"})


def test_an_attempts_event_is_named_by_the_attempt_unless_given_its_own_name(world):
    now = world.tick()

    event = Attempt(world.project, world.planner, "activity_log", now).record(detail="planned")

    assert Event.objects.get(pk=event.pk).action == "activity_log"


def test_a_refusal_is_logged_as_the_attempts_failed_action_with_the_code_and_the_attempt(world):
    world.claimed("task-1")
    task = world.task("task-1")
    now = world.tick()
    refused = Attempt(world.project, world.coder, "claim", now).conflict("taken", task=task)

    event = refused.refused.record(refused)

    event = Event.objects.get(pk=event.pk)
    assert (event.action, event.outcome, event.actor_id) == (
        "claim_failed",
        Event.Outcome.REJECTED,
        "coder-1",
    )
    assert (event.task, event.from_status, event.timestamp) == (task, task.status, now)
    assert event.detail == "refused: taken"
    assert event.data == {
        "code": Conflict.code,
        "attempted": "claim",
        "details": {"task": "task-1"},
    }
