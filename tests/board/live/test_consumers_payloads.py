"""The message contract of `boards.coordination.outbox` (STYLE.md "Realtime") and what boards
receive.

Nothing of ours is patched: a test channel joins the project's group on the in-memory layer,
the service runs inside `django_capture_on_commit_callbacks(execute=True)` (standing in for the
commit), and the test reads what arrived on its channel.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from boards.board.live.consumers import rendered
from boards.board.live.render import render_changes
from boards.coordination import outbox as events
from boards.coordination.models.records import Event
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.services import tasks
from boards.coordination.services.sprints import sprint_checkpoint
from boards.errors import ProtocolError
from tests.board.live.helpers import sprint_world

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_memory_layer")]


class Listener:
    """A channel of the test's own in the project's board group."""

    def __init__(self, project) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        async_to_sync(self.layer.group_add)(events.board_group(project.pk), self.channel)

    def messages(self) -> list[dict]:
        """Everything delivered so far (the in-memory layer delivers inside group_send)."""

        async def drain():
            queue = self.layer.channels.get(self.channel)
            count = queue.qsize() if queue is not None else 0
            return [await self.layer.receive(self.channel) for _ in range(count)]

        return async_to_sync(drain)()


@pytest.fixture
def world(django_capture_on_commit_callbacks):
    # The world's own setup is committed (and published) before any listener joins.
    with django_capture_on_commit_callbacks(execute=True):
        world = sprint_world()
        world.unclaimed("task-1", sprint_scope="planned")
        world.unclaimed("task-2", sprint_scope="planned")
    return world


def test_a_committed_transition_publishes_one_typed_message_of_ids(
    world, django_capture_on_commit_callbacks
):
    listener = Listener(world.project)
    before = events.current_sequence(world.project.pk)
    with django_capture_on_commit_callbacks(execute=True):
        world.claim("task-1")
    (message,) = listener.messages()
    assert message == {
        "type": "board.event",
        "project_id": world.project.pk,
        "seq": before + 1,
        "changes": message["changes"],
    }
    claimed = Event.objects.filter(project=world.project).latest("id")
    assert sorted((c["kind"], c["id"]) for c in message["changes"]) == sorted(
        [
            ("task", world.task("task-1").pk),
            ("agent", world.coder.pk),
            ("sprint", world.project.pk),
            ("event", claimed.pk),  # the activity feed's row (boards/insights/web/activity.py)
        ]
    )
    # Only ids travel: rendering happens in the websocket process.
    assert all(set(c) == {"kind", "id"} for c in message["changes"])
    assert events.current_sequence(world.project.pk) == before + 1


def test_an_event_says_whether_the_header_controls_changed(
    world, django_capture_on_commit_callbacks
):
    """A task's move changes the header's metrics, not its controls; a checkpoint changes the
    controls. Boards fetch their controls again only when told (STYLE.md "an event should say
    what changed"), so a transition costs no metrics computation per open admin board."""
    listener = Listener(world.project)
    with django_capture_on_commit_callbacks(execute=True):
        world.claim("task-1")
    (moved,) = listener.messages()
    with django_capture_on_commit_callbacks(execute=True):
        sprint_checkpoint(
            sprint=sprint_open(project=world.project),
            actor=world.admin,
            reason="Look",
            now=world.tick(),
        )
    (checkpointed,) = listener.messages()

    def sprint_changes(message):
        return [c for c in message["changes"] if c["kind"] == "sprint"]

    assert [c.get("controls", False) for c in sprint_changes(moved)] == [False]
    assert [c.get("controls", False) for c in sprint_changes(checkpointed)] == [True]
    header = [c for c in render_changes(world.project.pk, moved["changes"]) if "controls" in c]
    assert [c["controls"] for c in header] == [False]
    header = [
        c for c in render_changes(world.project.pk, checkpointed["changes"]) if "controls" in c
    ]
    assert [c["controls"] for c in header] == [True]


def test_sequence_is_contiguous_per_project(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        other = sprint_world()
        other.unclaimed("task-1", sprint_scope="planned")
    ours, theirs = Listener(world.project), Listener(other.project)
    start, their_start = (events.current_sequence(w.project.pk) for w in (world, other))
    for step in (
        lambda: world.claim("task-1"),
        lambda: other.claim("task-1"),
        lambda: world.submit("task-1"),
        lambda: world.claim("task-2", "coder-2"),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            step()
    assert [m["seq"] for m in ours.messages()] == [start + 1, start + 2, start + 3]
    assert [m["seq"] for m in theirs.messages()] == [their_start + 1]


def test_several_events_in_one_transaction_publish_one_message(
    world, django_capture_on_commit_callbacks
):
    listener = Listener(world.project)
    events_before = Event.objects.filter(project=world.project).count()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        world.claim("task-1")
        world.claim("task-2", "coder-2")
        world.submit("task-1")
    assert Event.objects.filter(project=world.project).count() - events_before == 3
    (message,) = listener.messages()
    kinds = sorted((c["kind"], c["id"]) for c in message["changes"])
    task_ids = [world.task(k).pk for k in ("task-1", "task-2")]
    coder_ids = [world.agent(a).pk for a in ("coder-1", "coder-2")]
    event_ids = Event.objects.filter(project=world.project).order_by("-id")[:3]
    assert kinds == sorted(
        [("task", i) for i in task_ids]
        + [("agent", i) for i in coder_ids]
        + [("sprint", world.project.pk)]
        + [("event", e.pk) for e in event_ids]
    )  # each object once, however many events touched it; each event once


def test_a_service_writing_several_events_publishes_one_message(
    world, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        world.blocked("task-3", sprint_scope="planned")
    listener = Listener(world.project)
    events_before = Event.objects.filter(project=world.project).count()
    with django_capture_on_commit_callbacks(execute=True):
        tasks.task_rescope(
            task=world.task("task-3"),
            actor=world.planner,
            reason="Too broad",
            new_tasks=[
                {"key": "task-3a", "description": "First half", "done_when": "half"},
                {"key": "task-3b", "description": "Second half", "done_when": "rest"},
            ],
            now=world.tick(),
        )
    assert Event.objects.filter(project=world.project).count() - events_before >= 3
    (message,) = listener.messages()
    task_ids = {c["id"] for c in message["changes"] if c["kind"] == "task"}
    assert task_ids == {world.task(k).pk for k in ("task-3", "task-3a", "task-3b")}


def test_a_rolled_back_transaction_publishes_nothing(world, django_capture_on_commit_callbacks):
    listener = Listener(world.project)
    before = events.current_sequence(world.project.pk)

    class Abort(Exception):
        pass

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort),
        transaction.atomic(),
    ):
        world.claim("task-1")
        raise Abort
    assert callbacks == []
    assert listener.messages() == []
    assert events.current_sequence(world.project.pk) == before
    assert world.task("task-1").status == "UNCLAIMED"


def test_a_refused_transition_publishes_only_its_audit_record(
    world, django_capture_on_commit_callbacks
):
    """The refusal rolls back; the rejected-attempt event (SPEC §4.1) is its own commit."""
    listener = Listener(world.project)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ProtocolError):
        # UNCLAIMED → READY_FOR_REVIEW is not an edge of seed 000.
        tasks.task_submit_for_review(
            task=world.task("task-1"), agent=world.coder, review_commit="c0ffee01", now=world.tick()
        )
    (message,) = listener.messages()
    assert ("task", world.task("task-1").pk) in {(c["kind"], c["id"]) for c in message["changes"]}
    assert world.task("task-1").status == "UNCLAIMED"


# Rendering goes through `database_sync_to_async`, which closes the test's connection between
# calls: these tests commit for real (the world fixture's commits publish as they happen).


@pytest.mark.django_db(transaction=True)
def test_the_rendered_payload_survives_a_json_round_trip(world, django_capture_on_commit_callbacks):
    listener = Listener(world.project)
    with django_capture_on_commit_callbacks(execute=True):
        world.claim("task-1")
    (message,) = listener.messages()
    payload = async_to_sync(rendered)(message)
    assert json.loads(json.dumps(payload)) == payload
    assert payload["type"] == "changes"
    assert payload["seq"] == message["seq"]
    by_type = {c["type"]: c for c in payload["changes"]}
    assert set(by_type) == {"task.changed", "agent.changed", "sprint.changed", "events.recorded"}
    for change in payload["changes"]:
        rows = change["events"] if change["type"] == "events.recorded" else [change]
        assert rows and all(isinstance(row["html"], str) for row in rows)
    card = by_type["task.changed"]
    assert card["task"]["key"] == "task-1"
    assert card["task"]["status"] == "CLAIMED"
    assert 'data-key="task-1"' in card["html"]
    assert 'data-status="CLAIMED"' in card["html"]
    assert by_type["agent.changed"]["agent"] == {"agent_id": "coder-1", "status": "WORKING"}
    assert (card["task"]["goal"], card["task"]["sprints"]) == ("goal-1", ["sprint-1"])


@pytest.mark.django_db(transaction=True)
def test_a_card_names_its_goal_and_sprints_for_the_boards_filters(world):
    world.unclaimed("stretch-1", sprint_scope="stretch")
    world.unclaimed("backlog-1")
    message = {
        "type": "board.event",
        "project_id": world.project.pk,
        "seq": 10**9 + 1,  # never handed out: no cached payload to hit
        "changes": [
            {"kind": "task", "id": world.task(key).pk} for key in ("stretch-1", "backlog-1")
        ],
    }
    stretch, backlog = (c["task"] for c in async_to_sync(rendered)(message)["changes"])
    assert (stretch["key"], stretch["goal"], stretch["sprints"]) == (
        "stretch-1",
        "goal-1",
        ["sprint-1"],
    )
    assert (backlog["key"], backlog["goal"], backlog["sprints"]) == ("backlog-1", "goal-1", [])


@pytest.mark.django_db(transaction=True)
def test_a_change_to_a_vanished_or_foreign_object_renders_nothing(world):
    """A message names ids; the renderer reads them within the message's project only."""
    other = sprint_world()
    other.unclaimed("task-9")
    message = {
        "type": "board.event",
        "project_id": world.project.pk,
        "seq": 10**9,  # never handed out: no cached payload to hit
        "changes": [
            {"kind": "task", "id": other.task("task-9").pk},
            {"kind": "agent", "id": other.coder.pk},
            {"kind": "task", "id": 10**12},
        ],
    }
    assert async_to_sync(rendered)(message) == {"type": "changes", "seq": 10**9, "changes": []}
