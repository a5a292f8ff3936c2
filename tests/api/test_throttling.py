"""API rate limits (liza_site/throttling.py): per agent key or user, and per client address.

The suite and the benchmarks run under the high defaults; these tests set low rates to prove the
429 with Retry-After in the error envelope. The counters are real Redis counters (the process's
shared client), under a key prefix of their own per test.
"""

from __future__ import annotations

import re
import socket
import uuid

import pytest
import redis
from django.conf import settings

from liza_site import redis_client, throttling
from liza_site.outages import REDIS
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    bearer,
    http_start,
    session_client,
)
from tests.lifecycle import World

UNKNOWN_KEY = "liza_0123456789ab_" + "x" * 43  # well formed, issued to nobody

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(monkeypatch):
    monkeypatch.setattr(throttling._FixedWindow, "prefix", f"liza-test:{uuid.uuid4().hex}")
    # Ten seconds into a window: a test's few requests never straddle two windows.
    monkeypatch.setattr(throttling._FixedWindow, "timer", staticmethod(lambda: 86_400.0 * 5 + 10))

    def set_rates(*, principal: str = "1000/min", address: str = "1000/min") -> None:
        monkeypatch.setattr(
            throttling._FixedWindow, "THROTTLE_RATES", {"principal": principal, "address": address}
        )

    return set_rates


@pytest.fixture
def world():
    return World(now=http_start())


def _assert_throttled(response) -> None:
    error = assert_envelope(response, 429, "throttled")
    assert int(response["Retry-After"]) == 50  # the rest of the one-minute window
    assert "throttled" in error["message"].lower()


def test_each_key_has_its_own_limit(rates, world):
    rates(principal="3/min")
    url = f"{api_base(world.project.slug)}/tasks"
    coder = agent_client(world.agent("coder-1"), REMOTE_ADDR="10.0.0.1")
    assert [coder.get(url).status_code for _ in range(3)] == [200, 200, 200]
    _assert_throttled(coder.get(url))
    # Another key — of the same agent too — and a signed-in person count on their own.
    assert agent_client(world.agent("coder-1"), REMOTE_ADDR="10.0.0.1").get(url).status_code == 200
    assert agent_client(world.agent("coder-2"), REMOTE_ADDR="10.0.0.1").get(url).status_code == 200
    admin = session_client(world.admin, REMOTE_ADDR="10.0.0.1")
    assert [admin.get(url).status_code for _ in range(3)] == [200, 200, 200]
    _assert_throttled(admin.get(url))


def test_each_address_has_its_own_limit_whatever_the_keys(rates, world):
    rates(address="4/min")
    url = f"{api_base(world.project.slug)}/tasks"
    clients = [agent_client(world.agent(f"coder-{n}"), REMOTE_ADDR="10.0.0.2") for n in (1, 2)]
    assert [c.get(url).status_code for c in clients for _ in range(2)] == [200] * 4
    _assert_throttled(clients[0].get(url))
    elsewhere = agent_client(world.agent("coder-3"), REMOTE_ADDR="10.0.0.3")
    assert elsewhere.get(url).status_code == 200


def test_requests_with_a_wrong_key_count_against_their_address(rates, world):
    rates(address="3/min")
    url = f"{api_base(world.project.slug)}/tasks"
    guesser = bearer(UNKNOWN_KEY, REMOTE_ADDR="10.0.0.4")
    assert [guesser.get(url).status_code for _ in range(3)] == [401, 401, 401]
    _assert_throttled(guesser.get(url))
    # A forged X-Forwarded-For does not make a new address (LIZA_NUM_PROXIES is 0).
    forged = bearer(UNKNOWN_KEY, REMOTE_ADDR="10.0.0.4", HTTP_X_FORWARDED_FOR="203.0.113.9")
    _assert_throttled(forged.get(url))


def test_behind_a_declared_proxy_the_forwarded_address_counts(rates, world, settings):
    settings.NUM_PROXIES = 1
    rates(address="2/min")
    url = f"{api_base(world.project.slug)}/tasks"
    proxy = "10.0.0.5"
    one = bearer(UNKNOWN_KEY, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.1")
    other = bearer(UNKNOWN_KEY, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.2")
    assert [one.get(url).status_code for _ in range(2)] == [401, 401]
    _assert_throttled(one.get(url))
    assert other.get(url).status_code == 401


def test_a_window_is_one_redis_counter_that_expires_after_the_window(rates, world):
    rates(principal="5/min")
    url = f"{api_base(world.project.slug)}/tasks"
    coder = agent_client(world.agent("coder-1"), REMOTE_ADDR="10.0.0.9")
    assert [coder.get(url).status_code for _ in range(2)] == [200, 200]
    store = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    prefix = throttling._FixedWindow.prefix
    counters = {key: int(store.get(key)) for key in store.scan_iter(f"{prefix}:*")}
    window = 86_400 * 5 // 60
    assert sorted(counters.values()) == [2, 2]
    assert f"{prefix}:address:10.0.0.9:60:{window}" in counters
    (principal,) = (k for k in counters if k.startswith(f"{prefix}:principal:key-"))
    assert principal.endswith(f":60:{window}")
    assert all(0 < store.ttl(key) <= 61 for key in counters)


def test_a_limiter_without_its_redis_lets_requests_through(monkeypatch, world):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
    monkeypatch.setattr(settings, "REDIS_URL", dead)
    redis_client.client.cache_clear()
    try:
        one_a_minute = {"principal": "1/min", "address": "1/min"}
        monkeypatch.setattr(throttling._FixedWindow, "THROTTLE_RATES", one_a_minute)
        client = agent_client(world.agent("coder-1"))
        url = f"{api_base(world.project.slug)}/tasks"
        assert [client.get(url).status_code for _ in range(3)] == [200, 200, 200]
        assert REDIS.down
    finally:
        REDIS.succeeded()  # the outage was this test's alone
        redis_client.client.cache_clear()  # the next test's client is for the real Redis


@pytest.mark.skipif(not settings.REDIS_URL, reason="the counters live in Redis")
def test_a_count_is_one_round_trip_and_its_window_expires(rates, world, monkeypatch):
    """`throttling.increment`: the counter incremented and its expiry set (the window and one
    second more) in one command, atomically, as the MULTI/EXEC pipeline it replaced did."""
    rates()
    sent: list = []
    original = redis.connection.AbstractConnection.send_packed_command

    def send(self, command, check_health=True):
        sent.append(command)
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", send)
    key = f"{throttling._FixedWindow.prefix}:direct"
    assert throttling.increment(key, 61) == 1  # the connection opened, the script known
    sent.clear()
    assert [throttling.increment(key, 61) for _ in range(3)] == [2, 3, 4]
    # One command a round trip (RESP: each command an array, `*<n>`), not MULTI … EXEC.
    commands = [re.findall(rb"(?:^|\r\n)\*\d+\r\n", b"".join(chunks)) for chunks in sent]
    assert [len(c) for c in commands] == [1, 1, 1]
    assert 0 < redis_client.client().ttl(key) <= 61
