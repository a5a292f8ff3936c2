"""The per-project sequence boards use to notice a missed event (boards.coordination.outbox)."""

from __future__ import annotations

import os

import pytest
import redis
from django.conf import settings

from boards.coordination import outbox as events
from liza_site.outages import REDIS

# No database row needed: the sequence is keyed by the project's id. Unique per test process,
# so parallel workers sharing one Redis never count on the same key.
PROJECT = 10**9 + os.getpid()


@pytest.mark.usefixtures("redis_layer")
def test_a_new_counter_continues_without_a_gap():
    first_seen = events.current_sequence(PROJECT)  # what a board rendered now would carry
    assert events.next_sequence(PROJECT) == first_seen + 1
    assert events.next_sequence(PROJECT) == first_seen + 2
    assert events.current_sequence(PROJECT) == first_seen + 2


@pytest.mark.usefixtures("redis_layer")
def test_a_lost_redis_counter_restarts_above_every_number_handed_out():
    """Redis restarted without persistence: boards must see a gap (and resync), never numbers
    they already have, which they would drop as applied."""
    handed_out = [events.next_sequence(PROJECT) for _ in range(3)]
    redis.Redis.from_url(settings.REDIS_URL).delete(f"liza:board-seq:{PROJECT}")
    after_restart = events.next_sequence(PROJECT)
    assert after_restart > max(handed_out) + 1
    assert events.current_sequence(PROJECT) == after_restart


@pytest.mark.usefixtures("in_memory_layer")
def test_without_redis_each_project_counts_on_its_own():
    start_a, start_b = events.current_sequence(PROJECT), events.current_sequence(PROJECT + 1)
    assert [events.next_sequence(PROJECT) for _ in range(2)] == [start_a + 1, start_a + 2]
    assert events.next_sequence(PROJECT + 1) == start_b + 1
    assert events.current_sequence(PROJECT) == start_a + 2


@pytest.mark.usefixtures("redis_layer")
def test_heartbeats_due_while_redis_is_down_leave_a_gap_not_a_retry(monkeypatch):
    """A window of heartbeats falls due during an outage: no attempt to reach Redis (a
    transition's message makes that), the number they would have taken is skipped instead, so
    open boards see a gap and resynchronise (as they do when live updates resume)."""
    before = events.current_sequence(PROJECT)
    events._beats.add(PROJECT, {(events.AGENT, 1): False})
    REDIS.failed(ConnectionError("down for this test"))
    clock = REDIS.clock
    monkeypatch.setattr(REDIS, "clock", lambda: clock() + 3600)  # a retry would be allowed now
    assert REDIS.allow()
    try:
        events._beats._publish(PROJECT)  # what its timer runs (which then finds nothing)
    finally:
        REDIS.succeeded()
    assert events.current_sequence(PROJECT) == before  # nothing numbered while down
    assert events.next_sequence(PROJECT) == before + 2  # the gap
