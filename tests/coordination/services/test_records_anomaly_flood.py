"""One agent key cannot stop the project with a flood of anomalies (issue #27 finding 9).

300 `retry_loop` with one `error_pattern` from one coder key in 5 s were all accepted, tripped
the breaker (`retry_cluster`) and checkpointed the sprint. Now (docs/decisions.md "Circuit
breaker"): a reporter logs at most `ANOMALY_RATE_LIMIT` anomalies per `ANOMALY_RATE_WINDOW`
seconds (429 `throttled`, exit 7, Retry-After), and of one reporter's anomalies sharing a
pattern's value at most `BREAKER_PER_REPORTER` count per `BREAKER_REPORTER_WINDOW` seconds.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Anomaly, CircuitBreaker
from boards.coordination.services.goals import goal_create
from boards.coordination.services.records import anomaly_create
from boards.coordination.services.sprints import sprint_create
from boards.protocol import SprintStatus
from boards.watch.services.watch import watch_sweep
from tests.api.helpers import agent_client, api_base, assert_envelope, http_start
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

RETRY = {"type": "retry_loop", "details": {"count": 3, "error_pattern": "ECONNRESET"}}


@pytest.fixture
def world():
    world = World(now=http_start())
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    sprint_create(project=world.project, actor=world.planner, now=world.tick())
    return world


def _sprint_status(world) -> str:
    return Sprint.objects.get(project=world.project).status


def test_a_flood_from_one_key_is_throttled_and_trips_nothing(world):
    coder = agent_client(world.agent("coder-1"))
    url = f"{api_base(world.project.slug)}/anomalies"
    answers = [coder.post(url, RETRY, format="json") for _ in range(p.ANOMALY_RATE_LIMIT + 5)]
    assert [a.status_code for a in answers[: p.ANOMALY_RATE_LIMIT]] == [201] * 20
    for refused in answers[p.ANOMALY_RATE_LIMIT :]:
        body = assert_envelope(refused, 429, "throttled")
        assert body["details"]["exit"] == 7
        assert refused["Retry-After"] == str(p.ANOMALY_RATE_WINDOW)
    assert Anomaly.objects.filter(project=world.project).count() == p.ANOMALY_RATE_LIMIT
    # Another agent is not held back by the first one's flood.
    other = agent_client(world.agent("coder-2")).post(url, RETRY, format="json")
    assert other.status_code == 201

    sweep = watch_sweep(project=world.project, now=world.tick(10))
    assert not any("circuit breaker" in line for line in sweep.actions), sweep.actions
    assert CircuitBreaker.objects.get(project=world.project).status == "OK"
    assert _sprint_status(world) == SprintStatus.IN_PROGRESS


def _retry(world, agent_id: str, at) -> None:
    anomaly_create(
        project=world.project,
        actor=world.agent(agent_id),
        anomaly_type="retry_loop",
        details={"count": 3, "error_pattern": "ECONNRESET"},
        now=at,
    )


def test_one_reporters_repeats_within_the_window_count_once(world):
    start = world.tick()
    for i in range(p.ANOMALY_RATE_LIMIT):
        _retry(world, "coder-1", start + timedelta(seconds=i * 0.1))
    watch_sweep(project=world.project, now=world.tick(10))
    assert CircuitBreaker.objects.get(project=world.project).status == "OK"


def test_distinct_occurrences_still_trip_the_breaker(world):
    """Three reporters at once, or one reporter a window apart each time: distinct occurrences,
    and the pattern (≥ 3 retry_loop, an error_pattern shared by ≥ 2) holds."""
    window = timedelta(seconds=p.BREAKER_REPORTER_WINDOW)
    start = world.tick()
    _retry(world, "coder-1", start)
    _retry(world, "coder-1", start + window)
    _retry(world, "coder-1", start + 2 * window)
    world.now = start + 2 * window
    watch_sweep(project=world.project, now=world.tick())
    breaker = CircuitBreaker.objects.get(project=world.project)
    assert breaker.status == "TRIGGERED"
    assert breaker.current_trigger["pattern"] == "retry_cluster"
