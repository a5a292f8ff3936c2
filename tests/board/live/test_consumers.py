"""The board websocket (SPEC §7, §11; STYLE.md "Realtime"): who may open it, what it delivers.

Every test commits for real (`transaction=True`): events are published by `on_commit`, and the
consumer reads the database the way a server process does.
"""

from __future__ import annotations

import pytest
import redis
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services import agent_heartbeat, agent_key_issue
from boards.board.live.consumers import CLOSE_NOT_FOUND
from boards.coordination import outbox as events
from boards.coordination.services.actors import SYSTEM
from tests.board.live.helpers import (
    board_socket,
    changes_of,
    next_changes,
    run,
    sprint_world,
)
from tests.factories import ProjectFactory, UserFactory, member

pytestmark = pytest.mark.django_db(transaction=True)


# -- who may connect: the websocket's role matrix (STYLE.md "Tests") ---------------------------


def _socket_for(kind: str, world, other_project):
    slug = world.project.slug
    if kind == "anonymous":
        return board_socket(slug)
    if kind in ("viewer", "member", "admin"):
        return board_socket(slug, user=member(world.project, kind))
    if kind == "staff":
        return board_socket(slug, user=UserFactory(is_staff=True))
    if kind == "admin of another project":
        return board_socket(slug, user=member(other_project, "admin"))
    if kind == "inactive admin":
        return board_socket(slug, user=member(world.project, "admin", is_active=False))
    if kind == "agent key of this project":
        _, plain = agent_key_issue(actor=SYSTEM, agent=world.coder, now=world.now)
        return board_socket(slug, headers=[(b"authorization", f"Bearer {plain}".encode())])
    if kind == "admin, missing project":
        return board_socket("no-such-project", user=member(world.project, "admin"))
    if kind in FOREIGN_ORIGINS:
        socket = board_socket(slug, user=member(world.project, "admin"))
        # Another site opening the socket with the visitor's cookie (or a bare client): another
        # host, or this host on another port or scheme (a different origin all the same).
        headers = [h for h in socket.scope["headers"] if h[0] != b"origin"]
        if FOREIGN_ORIGINS[kind] is not None:
            headers.append((b"origin", FOREIGN_ORIGINS[kind]))
        socket.scope["headers"] = headers
        return socket
    raise ValueError(kind)


FOREIGN_ORIGINS = {
    "admin, no origin": None,
    "admin, foreign origin": b"http://evil.example",
    "admin, origin on another port": b"http://127.0.0.1:1",
    "admin, origin with another scheme": b"https://127.0.0.1",
}
ACCEPTED, REFUSED, FOREIGN_SITE = "hello", "refused 4404", "refused by origin check"
CONNECT_MATRIX = {
    "anonymous": REFUSED,
    "viewer": ACCEPTED,
    "member": ACCEPTED,
    "admin": ACCEPTED,
    "staff": ACCEPTED,
    "admin of another project": REFUSED,
    "inactive admin": REFUSED,
    "agent key of this project": REFUSED,
    "admin, missing project": REFUSED,
    "admin, no origin": FOREIGN_SITE,
    "admin, foreign origin": FOREIGN_SITE,
    "admin, origin on another port": FOREIGN_SITE,
    "admin, origin with another scheme": FOREIGN_SITE,
}


@pytest.mark.usefixtures("in_memory_layer")
def test_connect_matrix():
    """One committed world, every principal: members get the hello with the project's current
    sequence; everyone else is refused before the handshake and joins no group."""
    world = sprint_world()
    other_project = ProjectFactory()
    group = events.board_group(world.project.pk)
    sockets = {kind: _socket_for(kind, world, other_project) for kind in CONNECT_MATRIX}
    # The setup ran in a process with no board open: its events went out unnumbered, for a
    # server to number (liza_site/channel_layer.py). Number one as a server would.
    events.next_sequence(world.project.pk)
    seq = events.current_sequence(world.project.pk)

    async def scenario():
        layer = get_channel_layer()
        outcomes = {}
        for kind, socket in sockets.items():
            connected, code = await socket.connect()
            members = len(layer.groups.get(group, {}))
            if connected:
                hello = await socket.receive_json_from()
                await socket.disconnect()
                outcomes[kind] = (ACCEPTED, hello, members)
            else:
                outcome = REFUSED if code == CLOSE_NOT_FOUND else FOREIGN_SITE
                outcomes[kind] = (outcome, None, members)
        return outcomes

    outcomes = run(scenario)
    assert {kind: o[0] for kind, o in outcomes.items()} == CONNECT_MATRIX
    assert seq > 0  # the hello carries the project's number, not a default
    for kind, (outcome, hello, members) in outcomes.items():
        if outcome == ACCEPTED:
            assert hello == {"type": "hello", "seq": seq}, kind
            assert members == 1, kind  # joined while open, left on disconnect
        else:
            assert members == 0, kind


# -- what a connected board receives ----------------------------------------------------------


@pytest.fixture(params=["memory", "redis"])
def layer(request):
    """Each delivery test runs on the embedded layer and on the production one (Redis)."""
    name = "in_memory_layer" if request.param == "memory" else "redis_layer"
    request.getfixturevalue(name)
    return request.param


class TestDelivery:
    def test_hello_then_each_committed_transition_in_sequence_with_its_card(self, layer):
        world = sprint_world()
        world.unclaimed("task-1", priority=2, sprint_scope="planned")
        socket = board_socket(world.project.slug, user=member(world.project, "viewer"))

        async def scenario():
            connected, _ = await socket.connect()
            assert connected
            hello = await socket.receive_json_from()
            received = []
            for step in (world.claim, world.submit, world.claim_review):
                await database_sync_to_async(step)("task-1")
                received.append(await next_changes(socket))
            await socket.disconnect()
            return hello, received

        hello, received = run(scenario)
        assert hello["type"] == "hello"
        assert [m["seq"] for m in received] == [hello["seq"] + n for n in (1, 2, 3)]
        assert hello["seq"] == events.current_sequence(world.project.pk) - 3
        if layer == "redis":
            # One stream for every ASGI process: the number lives in Redis.
            stored = redis.Redis.from_url(settings.REDIS_URL).get(
                f"liza:board-seq:{world.project.pk}"
            )
            assert int(stored) == received[-1]["seq"]

        message = received[0]  # the claim
        assert set(message) == {"type", "seq", "changes"}
        (task,) = changes_of(message, "task.changed")
        assert task["task"] == {
            "key": "task-1",
            "status": "CLAIMED",
            "priority": 2,
            "criticality": "standard",
            "assigned_to": "coder-1",
            "description": "Implement task-1",
            "goal": "goal-1",
            "sprints": ["sprint-1"],
        }
        html = task["html"]
        assert 'data-key="task-1"' in html
        assert 'data-status="CLAIMED"' in html
        assert 'class="assignee">coder-1<' in html
        assert 'class="iteration">1/10<' in html
        (agent,) = changes_of(message, "agent.changed")
        assert agent["agent"] == {"agent_id": "coder-1", "status": "WORKING"}
        assert 'data-agent="coder-1"' in agent["html"]
        assert '<span class="agent-task">task-1</span>' in agent["html"]
        (header,) = changes_of(message, "sprint.changed")
        assert 'id="board-header"' in header["html"]
        (feed,) = changes_of(message, "events.recorded")  # the activity feed's row
        assert [(e["action"], e["task"], e["actor"]) for e in feed["events"]] == [
            ("claimed", "task-1", "coder-1")
        ]
        assert len(message["changes"]) == 4

        cards = [changes_of(m, "task.changed")[0] for m in received]
        assert [c["task"]["status"] for c in cards] == [
            "CLAIMED",
            "READY_FOR_REVIEW",
            "READY_FOR_REVIEW",
        ]
        assert 'data-status="READY_FOR_REVIEW"' in cards[1]["html"]
        # The review claim changes the card without a status change: the reviewer shows.
        assert "code-reviewer-1" not in cards[1]["html"]
        assert "code-reviewer-1" in cards[2]["html"]

    def test_every_open_board_gets_the_same_payload_and_other_projects_none(self, layer):
        world = sprint_world()
        other = sprint_world()
        world.unclaimed("task-1", sprint_scope="planned")
        other.unclaimed("task-9", sprint_scope="planned")
        ours = [board_socket(world.project.slug, user=member(world.project, "viewer"))]
        ours.append(board_socket(world.project.slug, user=world.admin))
        theirs = board_socket(other.project.slug, user=other.admin)

        async def scenario():
            for socket in [*ours, theirs]:
                assert (await socket.connect())[0]
                await socket.receive_json_from()  # hello
            await database_sync_to_async(world.claim)("task-1")
            mine = [await next_changes(socket) for socket in ours]
            # Their board's first message is their own transition: ours never reached it.
            await database_sync_to_async(other.claim)("task-9")
            first_of_theirs = await next_changes(theirs)
            for socket in [*ours, theirs]:
                await socket.disconnect()
            return mine, first_of_theirs

        mine, first_of_theirs = run(scenario)
        assert mine[0] == mine[1]
        assert changes_of(mine[0], "task.changed")[0]["task"]["key"] == "task-1"
        assert [c["task"]["key"] for c in changes_of(first_of_theirs, "task.changed")] == ["task-9"]

    def test_a_heartbeat_reaches_an_open_board_in_sequence(self, layer, monkeypatch):
        """A heartbeat writes no event, but a board shows its agent's and task's leases: it
        reaches the board in the project's sequence. With Redis, heartbeats that commit within
        `BEAT_WINDOW` of each other share one message (the outbox's `_Beats`), and a
        transition meanwhile is not held back for them."""
        monkeypatch.setattr(events, "BEAT_WINDOW", 2.0)  # both heartbeats land in one window
        world = sprint_world()
        world.claimed("task-1", sprint_scope="planned")
        world.claimed("task-2", coder="coder-2", sprint_scope="planned")
        world.unclaimed("task-3", sprint_scope="planned")
        socket = board_socket(world.project.slug, user=member(world.project, "viewer"))

        def beat(agent_id: str) -> None:
            agent_heartbeat(agent=world.agent(agent_id), now=world.tick())

        async def scenario():
            assert (await socket.connect())[0]
            hello = await socket.receive_json_from()
            await database_sync_to_async(beat)("coder-1")
            await database_sync_to_async(beat)("coder-2")
            await database_sync_to_async(world.claim)("task-3", "coder-3")
            received = [await next_changes(socket) for _ in range(2 if layer == "redis" else 3)]
            await socket.disconnect()
            return hello, received

        hello, received = run(scenario)
        assert sorted(m["seq"] for m in received) == [
            hello["seq"] + n for n in range(1, len(received) + 1)
        ]

        def agents_of(message):
            return sorted(c["agent"]["agent_id"] for c in changes_of(message, "agent.changed"))

        def cards_of(message):
            return sorted(c["task"]["key"] for c in changes_of(message, "task.changed"))

        claim = next(m for m in received if changes_of(m, "events.recorded"))
        assert (agents_of(claim), cards_of(claim)) == (["coder-3"], ["task-3"])
        beats = [m for m in received if m is not claim]
        if layer == "redis":
            (beats_message,) = beats
            assert agents_of(beats_message) == ["coder-1", "coder-2"]
            assert cards_of(beats_message) == ["task-1", "task-2"]
        else:
            assert [(agents_of(m), cards_of(m)) for m in beats] == [
                (["coder-1"], ["task-1"]),
                (["coder-2"], ["task-2"]),
            ]


@pytest.mark.usefixtures("in_memory_layer")
class TestTheServerNamesTheGroup:
    def test_client_messages_cannot_join_another_projects_group(self):
        world = sprint_world()
        other = sprint_world()
        world.unclaimed("task-1", sprint_scope="planned")
        other.unclaimed("task-9", sprint_scope="planned")
        socket = board_socket(world.project.slug, user=world.admin)
        ours, theirs = events.board_group(world.project.pk), events.board_group(other.project.pk)
        their_task_id = other.task("task-9").pk

        async def scenario():
            layer = get_channel_layer()
            assert (await socket.connect())[0]
            await socket.receive_json_from()
            for attempt in (
                {"type": "subscribe", "group": theirs},
                {"type": "join", "project": other.project.slug},
                {"group": theirs, "project_id": other.project.pk},
                # Shaped like a layer message: must not be dispatched to `board_event`.
                {
                    "type": "board.event",
                    "project_id": other.project.pk,
                    "seq": 999,
                    "changes": [{"kind": "task", "id": their_task_id}],
                },
            ):
                await socket.send_json_to(attempt)
            await socket.send_json_to({"type": "ping"})
            pong = await socket.receive_json_from()
            groups = {g for g, members in layer.groups.items() if members}
            await database_sync_to_async(other.claim)("task-9")
            await database_sync_to_async(world.claim)("task-1")
            first = await next_changes(socket)
            await socket.disconnect()
            left = {g for g, members in layer.groups.items() if members}
            return pong, groups, first, left

        pong, groups, first, left = run(scenario)
        assert pong == {"type": "pong"}
        assert ours in groups
        assert theirs not in groups
        assert [c["task"]["key"] for c in changes_of(first, "task.changed")] == ["task-1"]
        assert first["seq"] != 999
        assert ours not in left  # disconnect leaves the group


@pytest.mark.usefixtures("in_memory_layer")
def test_a_message_is_rendered_once_whatever_the_number_of_open_boards():
    """Broadcasts must not cost a render per board (SPEC §11): the queries of a delivery do not
    grow with the number of boards watching it."""
    world = sprint_world()
    for key in ("task-1", "task-2"):
        world.unclaimed(key, sprint_scope="planned")
    viewers = [member(world.project, "viewer") for _ in range(4)]
    one = [board_socket(world.project.slug, user=viewers[0])]
    four = [board_socket(world.project.slug, user=v) for v in viewers]

    queries_so_far = database_sync_to_async(lambda: len(connection.queries_log))

    def deliver(sockets, key, coder):
        async def scenario():
            for socket in sockets:
                assert (await socket.connect())[0]
                await socket.receive_json_from()
            before = await queries_so_far()
            await database_sync_to_async(world.claim)(key, coder)
            received = [await next_changes(socket) for socket in sockets]
            after = await queries_so_far()
            for socket in sockets:
                await socket.disconnect()
            return after - before, received

        with CaptureQueriesContext(connection):  # records queries on the test's connection
            return run(scenario)

    with_one, _ = deliver(one, "task-1", "coder-1")
    with_four, received = deliver(four, "task-2", "coder-2")
    assert all(m == received[0] for m in received)
    assert with_four == with_one
