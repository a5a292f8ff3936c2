"""The agents' hot path (boards/api/hot.py): heartbeat and claim-next without DRF's dispatch.

An agent's request is served by the view's own handler without DRF's `dispatch` (proven by
making `dispatch` fail), and answers what the DRF view answers the same request: a query string
sends a request to the DRF view, so each case is asked both ways and the answers compared
(status, the headers DRF sets, the body with its times blanked). The `Liza-Generation` header
passes through: a superseded session is refused on the row the statement locks, whatever the key
cache holds.
"""

from __future__ import annotations

import socket
import threading
import uuid

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone
from redis.connection import AbstractConnection
from rest_framework.views import APIView

from agents import authentication, keycache
from agents.models import Agent, AgentKey, IdempotentRequest
from agents.services import agent_key_used, agent_leave, agent_register
from boards.api import hot
from boards.api.base import ProjectView
from boards.coordination.models.tasks import Task
from boards.coordination.services.projects import project_pause
from boards.protocol import TaskStatus
from liza_site import key_generation, redis_client, throttling
from liza_site.outages import REDIS
from tests.api.helpers import (
    api_base,
    assert_envelope,
    bearer,
    blank_times,
    http_start,
    key_for,
)
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

CLAIM = {"base_commit": "c0ffee01"}
HEADERS = ("Content-Type", "Allow", "Vary", "Retry-After", "Idempotent-Replayed")


@pytest.fixture
def world():
    keycache.clear()
    return World(now=http_start())


@pytest.fixture
def no_drf_dispatch(monkeypatch):
    def refuse(self, request, *args, **kwargs):
        raise AssertionError("DRF's dispatch ran")

    monkeypatch.setattr(APIView, "dispatch", refuse)
    monkeypatch.setattr(ProjectView, "dispatch", refuse)


def _answer(response):
    return (
        response.status_code,
        {h: response.get(h) for h in HEADERS},
        blank_times(response.json()),
    )


def test_heartbeat_and_claim_next_skip_drf_dispatch(world, no_drf_dispatch):
    world.unclaimed("T-1")
    client = bearer(key_for(world.coder))
    base = api_base(world.project.slug)
    claimed = client.post(f"{base}/tasks/claim-next", CLAIM, format="json")
    assert claimed.status_code == 200, claimed.content
    assert claimed.json()["task"]["key"] == "T-1"
    beat = client.post(f"{base}/agents/heartbeat", {"context_percent": 40}, format="json")
    assert beat.status_code == 200, beat.content
    assert beat.json()["task"] == "T-1"


def _both_ways(client, url, body, **extra):
    fast = client.post(url, body, format="json", **extra)
    drf = client.post(url + "?via=drf", body, format="json", **extra)
    return _answer(fast), _answer(drf)


@pytest.mark.parametrize(
    "body",
    [{}, {"context_percent": 50}, {"context_percent": 101}, {"context_percent": "x"}, [1]],
)
def test_a_heartbeat_answers_as_drf_does(world, body):
    client = bearer(key_for(world.coder))
    fast, drf = _both_ways(client, f"{api_base(world.project.slug)}/agents/heartbeat", body)
    assert fast == drf


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"{not json", 400),
        (b"", 200),
        (b'{"context_percent": 1e400}', 400),
        (b'{"note": "\\u0000"}', 400),
        (b"[" * 5000, 400),
    ],
)
def test_a_raw_body_answers_as_drf_does(world, raw, status):
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/agents/heartbeat"
    fast = client.post(url, raw, content_type="application/json")
    drf = client.post(url + "?via=drf", raw, content_type="application/json")
    assert _answer(fast) == _answer(drf)
    assert fast.status_code == status


def test_a_paused_project_answers_as_drf_does(world):
    world.unclaimed("T-1")
    project_pause(project=world.project, actor=world.admin, reason="lunch", now=timezone.now())
    client = bearer(key_for(world.coder))
    base = api_base(world.project.slug)
    fast, drf = _both_ways(client, f"{base}/agents/heartbeat", {})
    assert fast == drf
    assert fast[2]["stop"] == "paused"
    fast, drf = _both_ways(client, f"{base}/tasks/claim-next", {})
    assert fast == drf
    assert (fast[0], fast[2]["error"]["code"]) == (409, "paused")


def test_a_heartbeat_after_leave_is_409_not_registered_both_ways(world):
    """A departed agent's heartbeat, on the hot path and through the DRF view (`?via=drf`):
    the same 409 envelope, `not_registered` with exit 8, and its lease not brought back.
    Registering again makes its heartbeats count."""
    client = bearer(key_for(world.coder))
    base = api_base(world.project.slug)
    assert client.post(f"{base}/agents/leave", {}, format="json").status_code == 200
    gone = Agent.objects.get(pk=world.coder.pk)

    fast, drf = _both_ways(client, f"{base}/agents/heartbeat", {"context_percent": 30})

    assert fast == drf
    status, _, body = fast
    assert (status, body["error"]["code"]) == (409, "not_registered")
    assert body["error"]["details"]["exit"] == 8
    assert body["error"]["details"]["agent_id"] == "coder-1"
    assert body["error"]["message"].startswith("coder-1 is not registered: it left at ")
    after = Agent.objects.get(pk=world.coder.pk)
    assert (after.lease_expires, after.heartbeat, after.context_percent) == (
        gone.lease_expires,
        gone.heartbeat,
        gone.context_percent,
    )
    assert not after.has_live_lease(timezone.now())
    assert client.post(f"{base}/agents/register", {}, format="json").status_code == 200
    beat = client.post(f"{base}/agents/heartbeat", {"context_percent": 30}, format="json")
    assert beat.status_code == 200, beat.content
    assert Agent.objects.get(pk=world.coder.pk).has_live_lease(timezone.now())


def test_claim_next_answers_as_drf_does_with_an_empty_queue_and_a_held_task(world):
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/tasks/claim-next"
    fast, drf = _both_ways(client, url, {})
    assert fast == drf
    assert fast[2] == {"task": None}
    world.unclaimed("T-1")
    first = client.post(url, CLAIM, format="json")
    assert first.status_code == 200
    fast, drf = _both_ways(client, url, CLAIM)  # its own live claim, given back both ways
    assert fast == drf
    assert fast[2]["task"]["key"] == "T-1"


def test_an_idempotency_key_replays_the_first_answer(world, no_drf_dispatch):
    world.unclaimed("T-1")
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/tasks/claim-next"
    key = uuid.uuid4().hex
    first = client.post(url, CLAIM, format="json", HTTP_IDEMPOTENCY_KEY=key)
    again = client.post(url, CLAIM, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert first.status_code == again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    other = client.post(url, {**CLAIM, "worktree": "/x"}, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"


def test_the_rate_limits_answer_as_drf_does(world, monkeypatch):
    monkeypatch.setattr(throttling._FixedWindow, "prefix", f"liza-test:{uuid.uuid4().hex}")
    monkeypatch.setattr(throttling._FixedWindow, "timer", staticmethod(lambda: 86_400.0 * 5 + 10))
    monkeypatch.setattr(
        throttling._FixedWindow, "THROTTLE_RATES", {"principal": "2/min", "address": "1000/min"}
    )
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/agents/heartbeat"
    assert client.post(url, {}, format="json").status_code == 200
    assert client.post(url, {}, format="json").status_code == 200
    fast, drf = _both_ways(client, url, {})
    assert fast == drf
    assert fast[0] == 429
    assert fast[1]["Retry-After"] == "50"


def test_the_schema_describes_both_paths_as_their_drf_views():
    """drf-spectacular documents the thin routes exactly as the DRF views they replace."""
    from django.urls import URLPattern, path
    from drf_spectacular.generators import SchemaGenerator

    from boards.api import urls

    def schema(patterns):
        mounted = [path("api/v1/projects/<slug:slug>/", (patterns, None, None))]
        return SchemaGenerator(patterns=mounted).get_schema(request=None, public=True)

    thin = [p for p in urls.urlpatterns if hasattr(p.callback, "drf_view")]
    assert sorted(p.name for p in thin) == ["api-claim-next", "api-heartbeat"]
    as_drf = [
        URLPattern(p.pattern, p.callback.drf_view, p.default_args, p.name)
        if hasattr(p.callback, "drf_view")
        else p
        for p in urls.urlpatterns
    ]
    served, drf = schema(urls.urlpatterns), schema(as_drf)
    assert served == drf
    paths = served["paths"]
    assert "post" in paths["/api/v1/projects/{slug}/agents/heartbeat"]
    assert "post" in paths["/api/v1/projects/{slug}/tasks/claim-next"]


@pytest.mark.parametrize("route", ["agents/heartbeat", "tasks/claim-next"])
@pytest.mark.parametrize("idempotent", [False, True])
def test_an_agent_deleted_behind_the_cached_key_answers_as_drf_does(
    world, monkeypatch, route, idempotent
):
    """The agent deleted between the cached lookup and the service (here: a delete whose
    counter bump is lost) is DRF's 401 for a key that is gone, not a 500. (Its project cannot
    be deleted: tests/agents/test_keycache.py.)"""
    world.unclaimed("T-1")
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/{route}"
    body = CLAIM if route == "tasks/claim-next" else {}
    assert client.post(url, body, format="json").status_code == 200  # the key is cached
    monkeypatch.setattr(key_generation, "bump", lambda: None)
    Agent.objects.get(pk=world.coder.pk).delete()
    extra = {"HTTP_IDEMPOTENCY_KEY": uuid.uuid4().hex} if idempotent else {}
    fast, drf = _both_ways(client, url, body, **extra)
    assert fast == drf
    assert (fast[0], fast[2]["error"]["code"]) == (401, "authentication_failed")
    monkeypatch.setattr(ProjectView, "dispatch", None)  # the thin path answers it alone
    fast = client.post(url, body, format="json", **extra)
    assert fast["WWW-Authenticate"] == 'Bearer realm="liza"'


def _deleted_elsewhere(pk: int) -> None:
    """Delete an agent through another connection (another request, an admin), committed."""

    def delete() -> None:
        try:
            Agent.objects.filter(pk=pk).delete()
        finally:
            connection.close()

    thread = threading.Thread(target=delete)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the delete waited on a lock of the request"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", ["agents/heartbeat", "tasks/claim-next"])
@pytest.mark.parametrize("idempotent", [False, True])
def test_an_agent_deleted_after_authentication_answers_as_the_thin_path_does(
    monkeypatch, route, idempotent
):
    """The agent deleted (through another connection, committed) after its key authenticated
    the request and before the service locks it: both paths answer the 401 of a key that is
    gone, not a 500 (DRF's used to: Agent.DoesNotExist escaped the service). The window is where
    each path notes its key used (`agent_key_used`), once authenticated."""
    keycache.clear()
    world = World(now=http_start())
    world.unclaimed("T-1")
    fast_coder, drf_coder = world.coders[0], world.coders[1]
    doomed = {fast_coder.pk, drf_coder.pk}

    def used_then_deleted(*, key, now):
        agent_key_used(key=key, now=now)
        if key.agent_id in doomed:
            doomed.discard(key.agent_id)
            _deleted_elsewhere(key.agent_id)

    monkeypatch.setattr(authentication, "agent_key_used", used_then_deleted)
    monkeypatch.setattr(hot, "agent_key_used", used_then_deleted)
    plain = {coder.pk: key_for(coder) for coder in (fast_coder, drf_coder)}
    # Noted used a moment ago, so that noting it again writes nothing: the delete then waits on
    # no lock the request holds.
    AgentKey.objects.filter(agent__in=doomed).update(last_used_at=timezone.now())
    url = f"{api_base(world.project.slug)}/{route}"
    body = CLAIM if route == "tasks/claim-next" else {}
    extra = {"HTTP_IDEMPOTENCY_KEY": uuid.uuid4().hex} if idempotent else {}
    fast = bearer(plain[fast_coder.pk]).post(url, body, format="json", **extra)
    drf = bearer(plain[drf_coder.pk]).post(url + "?via=drf", body, format="json", **extra)
    assert _answer(fast) == _answer(drf)
    assert (fast.status_code, fast.json()["error"]["code"]) == (401, "authentication_failed")
    assert fast["WWW-Authenticate"] == drf["WWW-Authenticate"] == 'Bearer realm="liza"'
    assert not doomed  # both deletes happened in the window
    assert not Agent.objects.filter(pk__in=[fast_coder.pk, drf_coder.pk]).exists()
    assert not IdempotentRequest.objects.exists()  # nothing recorded to replay
    assert Task.objects.get(project=world.project, key="T-1").status == TaskStatus.UNCLAIMED


# -- the rate limits and the key counter in one Redis round trip ---------------------------------
# With the key in the process's cache, the address's limit, the key's own limit and the key
# counter are one script call (liza_site.throttling.count_hot); a key looked up (not cached, or
# its entry no longer trusted) is counted after the lookup, as before.

WINDOW = 86_400 * 5 // 60  # the one-minute window of the `rates` clock


@pytest.fixture
def rates(monkeypatch):
    """Counters of the test's own, ten seconds into a one-minute window; `rates(...)` sets the
    limits. Yields a reader of a counter: `count("address", "127.0.0.1")`."""
    prefix = f"liza-test:{uuid.uuid4().hex}"
    monkeypatch.setattr(throttling._FixedWindow, "prefix", prefix)
    monkeypatch.setattr(throttling._FixedWindow, "timer", staticmethod(lambda: 86_400.0 * 5 + 10))
    store = redis.Redis.from_url(settings.REDIS_URL)

    def set_rates(*, principal: str = "1000/min", address: str = "1000/min") -> None:
        monkeypatch.setattr(
            throttling._FixedWindow, "THROTTLE_RATES", {"principal": principal, "address": address}
        )

    def count(scope: str, ident: str) -> int:
        return int(store.get(f"{prefix}:{scope}:{ident}:60:{WINDOW}") or 0)

    set_rates()
    set_rates.count = count
    yield set_rates
    store.close()


@pytest.fixture
def round_trips(monkeypatch):
    """What this process sent to Redis, one entry a round trip (a command, a pipeline or a
    script call is sent at once, then its replies read)."""
    sent: list = []
    original = AbstractConnection.send_packed_command

    def send(self, command, check_health=True):
        sent.append(command)
        return original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", send)
    return sent


@pytest.fixture
def lookups(monkeypatch):
    """How many times a key was looked up in the database."""
    calls: list[str] = []
    original = keycache.agent_key_row

    def counted(*, prefix):
        calls.append(prefix)
        return original(prefix=prefix)

    monkeypatch.setattr(keycache, "agent_key_row", counted)
    return calls


needs_redis = pytest.mark.skipif(not settings.REDIS_URL, reason="the counters live in Redis")


def _beat(client, world):
    return client.post(f"{api_base(world.project.slug)}/agents/heartbeat", {}, format="json")


def _key_ident(plain: str) -> str:
    return f"key-{AgentKey.objects.get(prefix=plain.split('_')[1]).pk}"


@needs_redis
def test_a_cached_key_costs_one_redis_round_trip(world, rates, round_trips, lookups):
    plain = key_for(world.coder)
    client = bearer(plain)
    assert _beat(client, world).status_code == 200  # looked up, then its limit counted
    round_trips.clear()
    assert [_beat(client, world).status_code for _ in range(3)] == [200] * 3
    assert len(round_trips) == 3
    assert len(lookups) == 1
    # Both limits counted every request, the first's too.
    assert rates.count("address", "127.0.0.1") == rates.count("principal", _key_ident(plain)) == 4


@needs_redis
def test_the_address_limit_bites_through_the_one_call(world, rates, round_trips):
    rates(address="3/min")
    plain = key_for(world.coder)
    client = bearer(plain)
    assert [_beat(client, world).status_code for _ in range(3)] == [200] * 3
    round_trips.clear()
    refused = _beat(client, world)
    assert_envelope(refused, 429, "throttled")
    assert refused["Retry-After"] == "50"  # the rest of the one-minute window
    assert len(round_trips) == 1
    # As before: over the address's limit, the key's own is not counted.
    assert rates.count("principal", _key_ident(plain)) == 3
    elsewhere = bearer(plain, REMOTE_ADDR="10.0.0.7")
    assert _beat(elsewhere, world).status_code == 200


@needs_redis
def test_the_key_limit_bites_through_the_one_call(world, rates, round_trips):
    rates(principal="3/min")
    plain = key_for(world.coder)
    client = bearer(plain)
    assert [_beat(client, world).status_code for _ in range(3)] == [200] * 3
    round_trips.clear()
    refused = _beat(client, world)
    assert_envelope(refused, 429, "throttled")
    assert refused["Retry-After"] == "50"
    assert len(round_trips) == 1
    # Another key of the same agent has a limit of its own.
    assert _beat(bearer(key_for(world.coder)), world).status_code == 200
    assert rates.count("address", "127.0.0.1") == 5


@needs_redis
def test_a_bumped_key_counter_is_seen_on_the_very_next_request(world, rates, lookups):
    """The counter is read in the same call that would count the cached key: bumped (by
    another process), the entry is not used — the key is looked up again and counted once,
    after the lookup; revoked, it is refused and its limit not counted."""
    plain = key_for(world.coder)
    client = bearer(plain)
    ident = _key_ident(plain)
    assert [_beat(client, world).status_code for _ in range(2)] == [200, 200]
    assert len(lookups) == 1
    other = redis.Redis.from_url(settings.REDIS_URL)  # another process's connection
    try:
        other.incr(key_generation.KEY)
        assert _beat(client, world).status_code == 200
        assert len(lookups) == 2
        assert rates.count("principal", ident) == 3
        with connection.cursor() as cursor:  # revoked as another process would
            cursor.execute(
                "UPDATE agents_agentkey SET revoked_at = now() WHERE prefix = %s",
                [plain.split("_")[1]],
            )
        other.incr(key_generation.KEY)
    finally:
        other.close()
    assert_envelope(_beat(client, world), 401, "authentication_failed")
    assert len(lookups) == 3
    assert rates.count("principal", ident) == 3


def test_with_redis_down_a_cached_key_is_neither_limited_nor_trusted(world, monkeypatch, lookups):
    """As before the one call: Redis unreachable, no limit applies and the cache is not used
    (the key counter is unknown), so every request looks its key up."""
    client = bearer(key_for(world.coder))
    assert _beat(client, world).status_code == 200  # the key cached
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
    monkeypatch.setattr(settings, "REDIS_URL", dead)
    monkeypatch.setattr(
        throttling._FixedWindow, "THROTTLE_RATES", {"principal": "1/min", "address": "1/min"}
    )
    redis_client.client.cache_clear()
    try:
        assert [_beat(client, world).status_code for _ in range(3)] == [200] * 3
        assert REDIS.down
    finally:
        REDIS.succeeded()  # the outage was this test's alone
        redis_client.client.cache_clear()  # the next test's client is for the real Redis
    assert len(lookups) == 4


def test_a_superseded_sessions_hot_requests_are_refused_although_the_key_cache_is_stale(
    world, no_drf_dispatch
):
    """The key cache holds coder-1's row as session 1 left it (generation 1) when the id
    registers again: the runner's check on that copy lets session 1's requests through, and
    the heartbeat's and claim-next's statements refuse them on the row they lock (409
    `not_registered`, exit 8), with no statement more. Session 2's (generation 2) are served."""
    world.unclaimed("T-1")
    plain = key_for(world.coder)
    client, base = bearer(plain), api_base(world.project.slug)
    one, two = {"HTTP_LIZA_GENERATION": "1"}, {"HTTP_LIZA_GENERATION": "2"}
    assert client.post(f"{base}/agents/heartbeat", {}, format="json", **one).status_code == 200
    agent_leave(project=world.project, agent=world.coder, now=timezone.now())
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=timezone.now())
    assert keycache.held(plain).key.agent.generation == 1  # the cache's copy is stale

    for path, body in (("agents/heartbeat", {}), ("tasks/claim-next", CLAIM)):
        refused = client.post(f"{base}/{path}", body, format="json", **one)
        error = assert_envelope(refused, 409, "not_registered")
        assert error["message"].startswith("session 1 of coder-1 was superseded by session 2")
        assert error["details"]["exit"] == 8
    assert Task.objects.get(pk=world.task("T-1").pk).assigned_to == ""

    claimed = client.post(f"{base}/tasks/claim-next", CLAIM, format="json", **two)
    assert claimed.status_code == 200, claimed.content
    assert claimed.json()["task"]["key"] == "T-1"
