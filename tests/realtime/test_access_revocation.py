"""Access that ends closes live boards in every process (boards/board/live/access.py;
docs/security.md).

Two real daphne processes share PostgreSQL and Redis, as in test_two_processes.py. Every board
socket is open on process B. Access then ends elsewhere: a membership deleted through the
Django admin of process A, a sign-out through A, a user deactivated and an admin downgraded to
viewer by a third process (this test, as a shell or a watcher would). Right after each change an
agent's transition goes through A's API. The socket whose access ended must close with 4403
without receiving that change; a bystander's socket receives it. The downgraded admin keeps
the socket and its stream: viewers may read the board, and the stream is the same for every
role (so a downgrade has nothing to close).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request

import pytest
from django.conf import settings
from django.utils import timezone

from agents.services import agent_key_issue
from boards.board.live.consumers import CLOSE_ACCESS_ENDED
from boards.coordination.models.projects import Membership
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import membership_set
from tests.api.helpers import csrf_pair
from tests.board.live.helpers import redis_layer_settings, session_cookie, sprint_world
from tests.factories import UserFactory, member
from tests.realtime.test_two_processes import REDIS_URL, _http, two_servers

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CLOSED_WITHIN = 2.0  # seconds: a revocation travels like a board event (SPEC §7's second)


@pytest.fixture
def shared_redis(settings):
    with redis_layer_settings(settings, REDIS_URL) as prefix:
        yield prefix


def _post_form(url: str, cookie: str, fields: dict[str, str]) -> int:
    """A form POST as a browser sends it: session cookie, CSRF cookie and token."""
    secret, token = csrf_pair()
    request = urllib.request.Request(
        url,
        data=urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode(),
        method="POST",
        headers={
            "Cookie": f"{cookie}; {settings.CSRF_COOKIE_NAME}={secret}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # follows the redirect
        return response.status


async def _until_closed(ws) -> tuple[list[dict], int | None]:
    """Every message the socket gets until it closes (fails if it stays open)."""
    received = []
    try:
        while True:
            received.append(json.loads(await asyncio.wait_for(ws.recv(), CLOSED_WITHIN)))
    except ConnectionClosed:
        return received, ws.close_code


async def _changes_for(ws, key: str, status: str) -> dict:
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), CLOSED_WITHIN))
        for change in message.get("changes", []):
            task = change.get("task") or {}
            if (task.get("key"), task.get("status")) == (key, status):
                return change


def test_sockets_close_on_another_process_when_access_ends(shared_redis):
    world = sprint_world()
    for key in ("task-1", "task-2", "task-3"):
        world.unclaimed(key, sprint_scope="planned")
    slug = world.project.slug
    staff = UserFactory(is_staff=True, is_superuser=True)
    people = {
        "removed": member(world.project, "viewer"),
        "deactivated": member(world.project, "member"),
        "signed out": member(world.project, "member"),
        "downgraded": member(world.project, "admin"),
        "bystander": member(world.project, "viewer"),
    }
    cookies = {name: session_cookie(user) for name, user in people.items()}
    staff_cookie = session_cookie(staff)
    removed_membership = Membership.objects.get(project=world.project, user=people["removed"])
    agent_keys = {
        agent_id: agent_key_issue(actor=SYSTEM, agent=world.agent(agent_id), now=world.now)[1]
        for agent_id in ("coder-1", "coder-2", "coder-3")
    }

    def transition(server, agent_id: str, path: str, body: dict) -> None:
        status, answer = _http(
            "POST",
            f"{server.url}/api/v1/projects/{slug}/tasks/{path}",
            headers={"Authorization": f"Bearer {agent_keys[agent_id]}"},
            body=body,
        )
        assert status == 200, answer

    claim = {"base_commit": "base0001"}
    submit = {"review_commit": "c0ffee01", "tree_clean": True}

    with two_servers(shared_redis) as (a, b):
        ws_url = f"ws://127.0.0.1:{b.port}/ws/p/{slug}/"

        async def scenario():
            sockets = {}
            for name, cookie in cookies.items():
                ws = await connect(ws_url, additional_headers={"Cookie": cookie}, origin=b.url)
                assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "hello"
                sockets[name] = ws
            outcomes = {}

            async def ends(name: str, change, agent_id: str, path: str, body: dict, shows):
                """`change` ends `name`'s access; the transition `path` follows right behind,
                and the bystander sees it as `shows` (key, status)."""
                assert await asyncio.to_thread(change) in (None, 200)
                await asyncio.to_thread(transition, a, agent_id, path, body)
                seen = await _changes_for(sockets["bystander"], *shows)
                outcomes[name] = (await _until_closed(sockets[name]), shows, seen)

            # 1. The membership is deleted in the Django admin, served by process A.
            delete_url = f"{a.url}/admin/boards/membership/{removed_membership.pk}/delete/"
            await ends(
                "removed",
                lambda: _post_form(delete_url, staff_cookie, {"post": "yes"}),
                *("coder-1", "task-1/claim", claim, ("task-1", "CLAIMED")),
            )

            # 2. The user is deactivated (by a third process: this one).
            def deactivate() -> None:
                user = people["deactivated"]
                user.is_active = False
                user.save()

            await ends(
                "deactivated",
                deactivate,
                *("coder-1", "task-1/request-review", submit, ("task-1", "READY_FOR_REVIEW")),
            )

            # 3. The user signs out through process A.
            await ends(
                "signed out",
                lambda: _post_form(f"{a.url}/logout/", cookies["signed out"], {}),
                *("coder-2", "task-2/claim", claim, ("task-2", "CLAIMED")),
            )

            # 4. admin → viewer: the socket stays and goes on receiving.
            await asyncio.to_thread(
                membership_set,
                project=world.project,
                user=people["downgraded"],
                role=Membership.Role.VIEWER,
                actor=SYSTEM,
                now=timezone.now(),
            )
            await asyncio.to_thread(transition, a, "coder-3", "task-3/claim", claim)
            downgraded = await _changes_for(sockets["downgraded"], "task-3", "CLAIMED")
            bystander = await _changes_for(sockets["bystander"], "task-3", "CLAIMED")
            for name in ("downgraded", "bystander"):
                await sockets[name].close()
            return outcomes, downgraded, bystander

        outcomes, downgraded, bystander = asyncio.run(asyncio.wait_for(scenario(), 90))

    assert not Membership.objects.filter(pk=removed_membership.pk).exists()  # A did delete it
    for name in ("removed", "deactivated", "signed out"):
        (received, code), shows, seen_by_bystander = outcomes[name]
        assert code == CLOSE_ACCESS_ENDED, (name, code)
        # The change made right after the access ended reached the bystander, not this socket
        # (which may still hold changes from before, legitimately its own).
        assert (seen_by_bystander["task"]["key"], seen_by_bystander["task"]["status"]) == shows
        delivered = {
            (c["task"]["key"], c["task"]["status"])
            for m in received
            for c in m.get("changes", [])
            if c["type"] == "task.changed"
        }
        assert shows not in delivered, (name, delivered)
    assert downgraded["task"]["status"] == bystander["task"]["status"] == "CLAIMED"
