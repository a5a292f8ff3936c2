"""Scale-out (SPEC §2, §7): two ASGI server processes sharing PostgreSQL and Redis.

A browser's websocket is connected to process B; an agent's transition goes through process A's
HTTP API; B's socket must show it within a second. A socket that dies misses events and
resynchronises from B's fragment, then follows the stream again.

Both servers are real daphne subprocesses on the test database (the test's data is committed:
`transaction=True`), a Redis database of this test process's own (`tests.private_redis`) and a
channel prefix of this test's own. Every wait is
bounded and the servers are killed whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator

import pytest
from django.utils import timezone
from websockets.asyncio.client import connect

from agents.services import agent_key_issue
from boards.coordination import outbox as events
from boards.coordination.services.actors import SYSTEM
from tests.board.live.helpers import redis_layer_settings, session_cookie, sprint_world
from tests.board.web.helpers import read_columns
from tests.live_server import LiveServer, live_servers, suite_database_url
from tests.private_redis import private_redis_url

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = private_redis_url()
LIVE_WITHIN = 1.0  # SPEC §7: "within a second"


@contextlib.contextmanager
def two_servers(prefix: str) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Servers A and B on the test database, the shared Redis and this test's channel prefix."""
    with live_servers(
        ["A", "B"],
        database_url=suite_database_url(),
        server="daphne",
        redis_url=REDIS_URL,
        env={"LIZA_TEST_CHANNEL_PREFIX": prefix},
    ) as (a, b):
        yield a, b


def _http(method: str, url: str, *, headers: dict[str, str], body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()


async def _task_change(ws, key: str, status: str) -> dict:
    """The first `changes` message carrying `key` in `status` (other messages skipped)."""
    while True:
        message = json.loads(await ws.recv())
        if message.get("type") != "changes":
            continue
        for change in message["changes"]:
            task = change.get("task") or {}
            if change["type"] == "task.changed" and (task["key"], task["status"]) == (key, status):
                return {"seq": message["seq"], "change": change}


@pytest.fixture
def shared_redis(settings):
    # This process publishes its setup to the same Redis the servers use, as a third worker
    # would: one sequence per project across every process.
    with redis_layer_settings(settings, REDIS_URL) as prefix:
        yield prefix


def test_a_transition_through_process_a_reaches_a_board_on_process_b(shared_redis):
    world = sprint_world()
    for key in ("task-1", "task-2"):
        world.unclaimed(key, sprint_scope="planned")
    slug, project_id = world.project.slug, world.project.pk
    _, agent_key = agent_key_issue(actor=SYSTEM, agent=world.coder, now=world.now)
    _, other_key = agent_key_issue(actor=SYSTEM, agent=world.agent("coder-2"), now=world.now)
    cookie = session_cookie(world.admin)
    setup_seq = events.current_sequence(project_id)
    assert setup_seq > 0  # this process's own commits were numbered in the shared Redis

    with two_servers(shared_redis) as (a, b):
        browser = {"Cookie": cookie}
        agent = {"Authorization": f"Bearer {agent_key}"}
        api = f"{a.url}/api/v1/projects/{slug}/tasks"

        # The page comes from B (this also warms B: views imported, templates compiled).
        status, page = _http("GET", f"{b.url}/p/{slug}/", headers=browser)
        assert status == 200
        page_seq = int(re.search(r'data-seq="(\d+)"', page).group(1))
        assert page_seq == setup_seq

        async def scenario():
            ws_url = f"ws://127.0.0.1:{b.port}/ws/p/{slug}/"
            origin = b.url
            async with connect(ws_url, additional_headers=browser, origin=origin) as ws:
                hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
                waiting = asyncio.create_task(_task_change(ws, "task-1", "CLAIMED"))
                status, body = await asyncio.to_thread(
                    _http, "POST", f"{api}/task-1/claim", headers=agent,
                    body={"base_commit": "base0001"},
                )  # fmt: skip
                committed = time.monotonic()  # the response comes after the commit
                assert status == 200, body
                live = await asyncio.wait_for(waiting, LIVE_WITHIN)
                lag = time.monotonic() - committed
                # The socket dies without a closing handshake ...
                ws.transport.abort()
            # ... and misses the submit, made through A while it is gone.
            status, body = await asyncio.to_thread(
                _http, "POST", f"{api}/task-1/request-review", headers=agent,
                body={"review_commit": "c0ffee01", "tree_clean": True},
            )  # fmt: skip
            assert status == 200, body
            missed_seq = await asyncio.to_thread(events.current_sequence, project_id)
            async with connect(ws_url, additional_headers=browser, origin=origin) as ws:
                rehello = json.loads(await asyncio.wait_for(ws.recv(), 5))
                status, fragment = await asyncio.to_thread(
                    _http, "GET", f"{b.url}/p/{slug}/fragment", headers=browser
                )
                assert status == 200
                # After the resync the stream continues from the fragment's number.
                waiting = asyncio.create_task(_task_change(ws, "task-2", "CLAIMED"))
                status, body = await asyncio.to_thread(
                    _http, "POST", f"{api}/task-2/claim",
                    headers={"Authorization": f"Bearer {other_key}"},
                    body={"base_commit": "base0001"},
                )  # fmt: skip
                assert status == 200, body
                after = await asyncio.wait_for(waiting, LIVE_WITHIN + 2)
            return hello, live, lag, missed_seq, rehello, json.loads(fragment), after

        hello, live, lag, missed_seq, rehello, fragment, after = asyncio.run(
            asyncio.wait_for(scenario(), 60)
        )

    assert hello == {"type": "hello", "seq": page_seq}
    assert live["seq"] == page_seq + 1
    assert lag < LIVE_WITHIN
    card = live["change"]
    assert card["task"]["assigned_to"] == "coder-1"
    assert 'data-key="task-1"' in card["html"] and 'data-status="CLAIMED"' in card["html"]

    assert missed_seq > live["seq"]  # the submit was published while the socket was gone
    assert rehello == {"type": "hello", "seq": missed_seq}  # so the board knows to resync
    assert fragment["seq"] >= missed_seq
    columns = read_columns(fragment["columns"])
    assert [c["data-key"] for c in columns["READY_FOR_REVIEW"].cards] == ["task-1"]
    assert columns["CLAIMED"].cards == []
    assert after["seq"] == fragment["seq"] + 1


# -- agents split across both processes ---------------------------------------------------------

DRAIN_TASKS = 40
DRAIN_CODERS = 6  # three coders (each with a reviewer) on each server


def test_agents_split_across_two_processes_claim_each_task_once_and_both_boards_see_it_all(
    shared_redis,
):
    """Issue 26 §5: two server processes with no shared memory, one PostgreSQL, one Redis; half
    the agents work through each; a board open on each. Every task is claimed once (the row
    locks, not a process, decide), and every transition reaches both boards."""
    from bench.http_drain import drain, queue
    from boards.coordination.models.records import Event
    from tests.factories import ProjectFactory, member

    project = ProjectFactory()
    admin = member(project)
    keys, pairs = queue(project, tasks=DRAIN_TASKS, coders=DRAIN_CODERS, now=timezone.now())
    cookie = session_cookie(admin)
    slug = project.slug

    with two_servers(shared_redis) as servers:
        seen: dict[str, dict[str, set[str]]] = {s.name: {} for s in servers}
        seqs: dict[str, list[int]] = {s.name: [] for s in servers}
        ready = threading.Barrier(len(servers) + 1, timeout=30)
        done = threading.Event()

        async def watch(server) -> None:
            ws_url = f"ws://127.0.0.1:{server.port}/ws/p/{slug}/"
            async with connect(
                ws_url, additional_headers={"Cookie": cookie}, origin=server.url
            ) as ws:
                await asyncio.wait_for(ws.recv(), 5)  # hello
                await asyncio.to_thread(ready.wait)
                while not done.is_set():
                    try:
                        message = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                    except TimeoutError:
                        continue
                    if message.get("type") == "changes":
                        seqs[server.name].append(message["seq"])
                    for change in message.get("changes", []):
                        task = change.get("task") or {}
                        if change["type"] == "task.changed":
                            seen[server.name].setdefault(task["key"], set()).add(task["status"])

        watchers = [
            threading.Thread(target=asyncio.run, args=(watch(s),), daemon=True) for s in servers
        ]
        for thread in watchers:
            thread.start()
        ready.wait()
        halves = [pairs[: DRAIN_CODERS // 2], pairs[DRAIN_CODERS // 2 :]]
        results = [None, None]

        def run(i: int) -> None:
            results[i] = drain(servers[i].url, slug, halves[i], deadline_s=120)

        drains = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in drains:
            thread.start()
        for thread in drains:
            thread.join(150)
        # The last changes have a moment to arrive on both sockets (each message is rendered
        # by the process that delivers it; on a loaded 2-core box that lags by seconds).
        deadline = time.monotonic() + 60
        last = events.current_sequence(project.pk)

        def caught_up() -> bool:
            return all(numbers and max(numbers) >= last for numbers in seqs.values())

        while time.monotonic() < deadline and not caught_up():
            time.sleep(0.1)
        done.set()
        for thread in watchers:
            thread.join(10)

    a, b = results
    assert a is not None and b is not None and not a.hung and not b.hung
    assert a.unexpected == [] and b.unexpected == [], (a.unexpected + b.unexpected)[:20]
    assert a.claims and b.claims  # both processes did work
    claimed = Counter(key for _, key in a.claims + b.claims)
    assert sorted(claimed) == keys and set(claimed.values()) == {1}  # 0 double claims
    per_task = Counter(
        Event.objects.filter(project=project, action="claimed").values_list("task__key", flat=True)
    )
    assert per_task == dict.fromkeys(keys, 1)
    # One stream, every message of it on both boards, none lost. (Two processes publish
    # concurrently, so two numbers can arrive swapped; a board treats that as a gap and
    # resyncs, which loses nothing either.)
    for name, numbers in seqs.items():
        first = min(numbers)
        assert sorted(numbers) == list(range(first, first + len(numbers))), name
    assert max(seqs["A"]) == max(seqs["B"])
    # ... and each task's approval, whichever process it went through, on both boards. (A
    # message carries the card as it is when rendered, so a claim followed at once by a
    # submit may show only the later state: the board shows the present, not a replay.)
    for name, statuses in seen.items():
        missing = [key for key in keys if "APPROVED" not in statuses.get(key, set())]
        assert missing == [], (name, missing[:10])
