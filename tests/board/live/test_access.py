"""A board socket ends when its user's access ends (boards/board/live/access.py; docs/security.md).

One process here, on both layers; tests/realtime/test_access_revocation.py proves the same
across two server processes. Each case opens a socket, ends the access the way an admin or the
user would, then commits a change the board would show: the socket must close with 4403 and
must not receive that change. A role change within the project keeps the socket, which goes on
receiving (every role may read the board).
"""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client

from boards.board.live.consumers import CLOSE_ACCESS_ENDED
from boards.coordination.models.projects import Membership
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import membership_set
from tests.board.live.helpers import board_socket, next_changes, run, sprint_world
from tests.factories import member

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["memory", "redis"])
def layer(request):
    request.getfixturevalue("in_memory_layer" if request.param == "memory" else "redis_layer")
    return request.param


def _session_key(socket) -> str:
    cookie = dict(socket.scope["headers"])[b"cookie"].decode()
    name, _, value = cookie.partition("=")
    assert name == settings.SESSION_COOKIE_NAME
    return value


def _sign_out(session_key: str) -> None:
    """POST /logout/ with that session's cookie, as the user's browser does."""
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    response = client.post("/logout/")
    assert response.status_code == 302


def _remove_membership(user, world, socket) -> None:
    Membership.objects.filter(project=world.project, user=user).delete()


def _deactivate(user, world, socket) -> None:
    user.is_active = False
    user.save()


def _delete_user(user, world, socket) -> None:
    user.delete()


def _change_password(user, world, socket) -> None:
    # Django invalidates the user's other sessions when the password changes.
    user.set_password("a-brand-new-secret-9")
    user.save()


def _log_out(user, world, socket) -> None:
    _sign_out(_session_key(socket))


ENDINGS = {
    "membership removed": _remove_membership,
    "user deactivated": _deactivate,
    "user deleted": _delete_user,
    "password changed": _change_password,
    "signed out": _log_out,
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_socket_closes_and_receives_nothing_more(layer, ending):
    world = sprint_world()
    world.unclaimed("task-1", sprint_scope="planned")
    user = member(world.project, "member")
    socket = board_socket(world.project.slug, user=user)

    async def scenario():
        connected, _ = await socket.connect()
        assert connected
        assert (await socket.receive_json_from())["type"] == "hello"
        await database_sync_to_async(ENDINGS[ending])(user, world, socket)
        # A change right after: had the socket stayed, it would show this claim.
        await database_sync_to_async(world.claim)("task-1")
        received = []
        while True:
            output = await socket.receive_output(timeout=3)
            if output["type"] == "websocket.close":
                return received, output["code"]
            received.append(output)

    received, code = run(scenario)
    assert code == CLOSE_ACCESS_ENDED
    assert received == []


def test_a_role_change_keeps_the_socket_and_its_stream(layer):
    """admin → viewer closes nothing: viewers read the board, and the stream is the same for
    every role. The socket is re-checked and goes on receiving."""
    world = sprint_world()
    world.unclaimed("task-1", sprint_scope="planned")
    admin = member(world.project, "admin")
    socket = board_socket(world.project.slug, user=admin)

    async def scenario():
        connected, _ = await socket.connect()
        assert connected
        await socket.receive_json_from()
        await database_sync_to_async(membership_set)(
            project=world.project,
            user=admin,
            role=Membership.Role.VIEWER,
            actor=SYSTEM,
            now=world.now,
        )
        # The role change is an event too: its activity-feed row comes first.
        role_changed = await next_changes(socket)
        await database_sync_to_async(world.claim)("task-1")
        message = await next_changes(socket)
        await socket.disconnect()
        return role_changed, message

    role_changed, message = run(scenario)
    (feed,) = [c for c in role_changed["changes"] if c["type"] == "events.recorded"]
    assert [e["action"] for e in feed["events"]] == ["membership_set"]
    assert [c["task"]["key"] for c in message["changes"] if c["type"] == "task.changed"] == [
        "task-1"
    ]


def test_only_the_signed_out_session_and_the_revoked_user_lose_their_sockets(layer):
    """Signing out on one browser leaves the same user's other browser open; removing one
    user leaves everyone else's socket open."""
    world = sprint_world()
    world.unclaimed("task-1", sprint_scope="planned")
    user = member(world.project, "member")
    other = member(world.project, "viewer")
    leaving = board_socket(world.project.slug, user=user)
    same_user_elsewhere = board_socket(world.project.slug, user=user)
    bystander = board_socket(world.project.slug, user=other)
    assert _session_key(leaving) != _session_key(same_user_elsewhere)

    async def scenario():
        for socket in (leaving, same_user_elsewhere, bystander):
            assert (await socket.connect())[0]
            await socket.receive_json_from()
        await database_sync_to_async(_sign_out)(_session_key(leaving))
        closed = await leaving.receive_output(timeout=3)
        await database_sync_to_async(world.claim)("task-1")
        seen = [await next_changes(same_user_elsewhere), await next_changes(bystander)]
        for socket in (same_user_elsewhere, bystander):
            await socket.disconnect()
        return closed, seen

    closed, seen = run(scenario)
    assert closed == {"type": "websocket.close", "code": CLOSE_ACCESS_ENDED}
    assert all(any(c["type"] == "task.changed" for c in m["changes"]) for m in seen)
