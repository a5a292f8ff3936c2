"""`GET /metrics` (issue #11 "Operator metrics"): who may scrape it, that its per-project
figures are the database's, that its counters count committed events once, and that with
several worker processes every scrape sums them all."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from agents.services import agent_key_issue
from boards.coordination.models.records import Alert
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import config_update
from boards.errors import Conflict
from boards.watch.services.watch import watch_sweep
from boards.watch.services.webhook_attempts import BACKOFF
from boards.watch.services.webhooks import webhook_deliver_due
from liza_site.outages import REDIS
from tests.factories import UserFactory
from tests.lifecycle import World
from tests.live_server import live_servers, suite_database_url
from tests.webhook_receiver import webhook_receiver

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-for-tests"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(client: Client | None = None, **headers: str) -> dict:
    response = (client or Client()).get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return samples(response.content.decode())


@pytest.fixture
def token(settings):
    settings.LIZA_METRICS_TOKEN = TOKEN
    return TOKEN


def _session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("anonymous", 401),
        ("wrong token", 401),
        ("token of another scheme", 401),
        ("project admin (not staff)", 401),
        ("staff session", 200),
        ("the token", 200),
    ],
)
def test_who_may_scrape(world, token, who, status):
    client = Client()
    headers = {}
    if who == "wrong token":
        headers["Authorization"] = "Bearer nope"
    elif who == "token of another scheme":
        headers["Authorization"] = f"Basic {TOKEN}"
    elif who == "project admin (not staff)":
        client = _session(world.admin)
    elif who == "staff session":
        client = _session(UserFactory(is_staff=True))
    elif who == "the token":
        headers["Authorization"] = f"Bearer {TOKEN}"
    response = client.get("/metrics", headers=headers)
    assert response.status_code == status
    if status == 401:
        assert response.json()["error"]["code"] == "not_authenticated"
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert b"liza_tasks" not in response.content


def test_without_a_configured_token_no_token_opens_it(world, settings):
    settings.LIZA_METRICS_TOKEN = ""
    for given in ("Bearer ", "Bearer", ""):
        response = Client().get("/metrics", headers={"Authorization": given})
        assert response.status_code == 401


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_only_get(token, method):
    response = getattr(Client(), method)("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_the_figures_are_the_databases_per_project(token):
    now = timezone.now()
    world = World(now=now - timedelta(minutes=10))
    other = World(now=now - timedelta(minutes=10))
    world.unclaimed("T-1")
    world.unclaimed("T-2")
    claimed = world.claimed("T-3")
    # A lease that runs out within the minute, and one that does not.
    world.claimed("T-4", coder="coder-2")
    type(claimed).objects.filter(pk=claimed.pk).update(lease_expires=now + timedelta(seconds=30))
    Alert.objects.create(
        project=world.project, type=Alert.Type.BLOCKED, level=Alert.Level.CRITICAL,
        message="m", created=now,
    )  # fmt: skip
    Alert.objects.create(
        project=world.project, type=Alert.Type.BLOCKED, message="m", created=now, resolved_at=now
    )
    watch_sweep(project=other.project, now=now - timedelta(seconds=42))

    found = scrape(**{"Authorization": f"Bearer {TOKEN}"})
    slug, other_slug = world.project.slug, other.project.slug

    def tasks(project, state):
        return found[("liza_tasks", (("project", project), ("state", state)))]

    assert (tasks(slug, "UNCLAIMED"), tasks(slug, "CLAIMED"), tasks(slug, "MERGED")) == (2, 2, 0)
    assert tasks(other_slug, "UNCLAIMED") == 0
    assert found[("liza_open_alerts", (("level", "critical"), ("project", slug)))] == 1
    assert found[("liza_open_alerts", (("level", "warning"), ("project", slug)))] == 0
    assert found[("liza_leases_expiring_soon", (("project", slug),))] == 1
    age = found[("liza_watcher_last_sweep_age_seconds", (("project", other_slug),))]
    assert 42 <= age < 60
    # Never swept: no sample rather than a made-up age.
    assert ("liza_watcher_last_sweep_age_seconds", (("project", slug),)) not in found


def _count(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_committed_events_and_refusals_are_counted_once(
    world, token, django_capture_on_commit_callbacks
):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    before = scrape(**auth)
    with django_capture_on_commit_callbacks(execute=True):
        world.claimed("T-1")
        with pytest.raises(Conflict):
            world.claim("T-1", coder="coder-2")  # already claimed: refused, and recorded
    after = scrape(**auth)

    def grew(name: str, **labels: str) -> float:
        return _count(after, name, **labels) - _count(before, name, **labels)

    assert grew("liza_events_total", action="claimed", outcome="applied") == 1
    assert grew("liza_events_total", action="claim_failed", outcome="rejected") == 1
    assert grew("liza_refusals_total", code="conflict") == 1
    assert grew("liza_claims_total", kind="task", outcome="applied") == 1
    assert grew("liza_claims_total", kind="task", outcome="rejected") == 1
    # world.claimed() creates the task (DRAFT), finalizes it and claims it.
    assert grew("liza_transitions_total", from_state="UNCLAIMED", to_state="CLAIMED") == 1
    assert grew("liza_transitions_total", from_state="DRAFT", to_state="UNCLAIMED") == 1


def test_webhook_deliveries_are_counted_by_outcome(
    world, token, django_capture_on_commit_callbacks
):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    before = scrape(**auth)
    with webhook_receiver(statuses=[500, 200]) as receiver:
        config_update(
            project=world.project,
            actor=world.admin,
            now=world.tick(),
            escalation_webhook=receiver.url,
            webhook_secret="whsec-metrics-0123456789",
        )
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        with django_capture_on_commit_callbacks(execute=True):
            webhook_deliver_due(now=at)
            webhook_deliver_due(now=at + timedelta(seconds=BACKOFF[0]))
    after = scrape(**auth)
    for outcome in ("failed", "delivered"):
        grew = _count(after, "liza_webhook_deliveries_total", outcome=outcome) - _count(
            before, "liza_webhook_deliveries_total", outcome=outcome
        )
        assert grew == 1, outcome


def test_redis_up_is_a_live_ping(token, settings):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    if settings.REDIS_URL:
        assert scrape(**auth)[("liza_redis_up", ())] == 1
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    try:
        found = scrape(**auth)
        assert found[("liza_redis_up", ())] == 0
        assert found[("liza_redis_failures_total", ())] >= 1
    finally:
        REDIS.succeeded()  # the outage was this test's alone
    settings.REDIS_URL = ""
    assert ("liza_redis_up", ()) not in scrape(**auth)  # the embedded default has no Redis


@pytest.mark.django_db(transaction=True)
def test_with_several_processes_every_scrape_sums_them_all(tmp_path):
    """Two server processes sharing PROMETHEUS_MULTIPROC_DIR, as granian's workers do: claims
    made through each, and each one's scrape counts all of them."""
    world = World(now=timezone.now())
    for key in ("T-1", "T-2", "T-3"):
        world.unclaimed(key)
    coders = [world.agent("coder-1"), world.agent("coder-2"), world.agent("coder-3")]
    keys = [agent_key_issue(actor=SYSTEM, agent=c, now=timezone.now())[1] for c in coders]
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "LIZA_METRICS_TOKEN": TOKEN}
    with live_servers(["a", "b"], database_url=suite_database_url(), env=env) as servers:
        for key, server in zip(keys, [*servers, servers[0]], strict=True):
            answer = httpx.post(
                f"{server.url}/api/v1/projects/{world.project.slug}/tasks/claim-next",
                json={"base_commit": "base0001"},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            assert answer.status_code == 200 and answer.json()["task"], answer.text
        for server in servers:
            text = httpx.get(
                f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
            ).text
            found = samples(text)
            assert _count(found, "liza_events_total", action="claimed", outcome="applied") == 3
