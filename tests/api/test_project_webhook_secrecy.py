"""Issue #27 finding 3: the escalation webhook's URL (and the token in it) reaches admins only.

The `config_updated` event carried the old and new URL in `detail` and `data.changes`, readable
by viewers, members and every agent key (API `…/events`, the activity page, the live feed).
Now the log holds the URLs only redacted (scheme, host, port); non-admins read "changed";
admins read the redacted URLs; events written before the fix read the same way. The delivery
log, its errors and the WEBHOOK_FAILING alert hold no token either.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from boards.board.live.render import events_recorded
from boards.coordination.models.records import Alert, Event
from boards.coordination.services.audit import record_event
from boards.coordination.services.projects import config_update
from boards.watch.models import WebhookAttempt
from boards.watch.services.watch import watch_sweep
from boards.watch.services.webhooks import webhook_deliver_due
from tests.api.helpers import agent_client, api_base, session_client
from tests.api.test_role_matrix import Tenant
from tests.webhook_receiver import webhook_receiver

pytestmark = pytest.mark.django_db

TOKENS = ("s3cr3t-path-token", "qs-token-value", "hunter2")
URL = "https://bot:hunter2@hooks.example.com/T0/s3cr3t-path-token?token=qs-token-value"
SHOWN = "https://…@hooks.example.com/…"


def _no_token(text: str) -> None:
    for token in TOKENS:
        assert token not in text


def _set_webhook(t: Tenant, url: str = URL) -> None:
    config_update(
        project=t.project, actor=t.users["admin"], now=t.world.tick(), escalation_webhook=url
    )


def _config_event(body: list[dict]) -> dict:
    [event] = [e for e in body if e["action"] == "config_updated"]
    return event


READERS = ["viewer", "member", "coder-1", "planner-1"]


def _client(t: Tenant, reader: str):
    if reader in t.users:
        return session_client(t.users[reader])
    return agent_client(t.agent(reader))


@pytest.mark.parametrize("reader", READERS)
def test_a_non_admin_reads_that_the_webhook_changed_and_nothing_of_its_url(reader):
    t = Tenant()
    _set_webhook(t)
    response = _client(t, reader).get(f"{api_base(t.slug)}/events")
    assert response.status_code == 200
    _no_token(response.content.decode())
    assert "hooks.example.com" not in response.content.decode()
    event = _config_event(response.json())
    assert event["detail"] == "escalation_webhook changed"
    assert event["data"]["changes"] == {"escalation_webhook": "changed"}


def test_an_admin_reads_the_urls_redacted_and_the_log_holds_no_token():
    t = Tenant()
    _set_webhook(t)
    _set_webhook(t, "http://hooks.example.org:8080/")
    response = session_client(t.users["admin"]).get(f"{api_base(t.slug)}/events")
    _no_token(response.content.decode())
    changes = [e["data"]["changes"] for e in response.json() if e["action"] == "config_updated"]
    assert changes == [
        {"escalation_webhook": {"old": "", "new": SHOWN}},
        {"escalation_webhook": {"old": SHOWN, "new": "http://hooks.example.org:8080"}},
    ]
    for event in Event.objects.filter(project=t.project):  # what is stored, for anyone
        _no_token(f"{event.detail} {event.data}")


def test_the_activity_page_and_the_live_feed_show_changed():
    t = Tenant()
    _set_webhook(t)
    page = session_client(t.users["viewer"]).get(f"/p/{t.slug}/activity/")
    assert page.status_code == 200
    _no_token(page.content.decode())
    assert "escalation_webhook changed" in page.content.decode()
    event = Event.objects.get(project=t.project, action="config_updated")
    live = events_recorded(t.project, [event.pk])  # rendered once for every socket
    assert "escalation_webhook changed" in live["events"][0]["html"]
    _no_token(str(live))


def test_an_event_written_before_the_fix_is_read_the_same_way():
    """The log is append-only: rows that hold a whole URL are redacted when read."""
    t = Tenant()
    record_event(
        project=t.project,
        actor=t.users["admin"],
        action="config_updated",
        now=t.world.tick(),
        detail=f"escalation_webhook none → {URL}, watch_interval 10 → 5",
        data={
            "changes": {
                "escalation_webhook": {"old": "", "new": URL},
                "watch_interval": {"old": 10, "new": 5},
            }
        },
    )
    viewer = session_client(t.users["viewer"])
    api = viewer.get(f"{api_base(t.slug)}/events")
    page = viewer.get(f"/p/{t.slug}/activity/")
    for text in (api.content.decode(), page.content.decode()):
        _no_token(text)
    event = _config_event(api.json())
    parts = set(event["detail"].split(", "))  # jsonb keeps its own key order
    assert parts == {"escalation_webhook changed", "watch_interval 10 → 5"}
    admin = session_client(t.users["admin"]).get(f"{api_base(t.slug)}/events")
    _no_token(admin.content.decode())
    assert _config_event(admin.json())["data"]["changes"]["escalation_webhook"]["new"] == SHOWN


def test_the_delivery_log_and_the_failing_alert_hold_no_token(django_capture_on_commit_callbacks):
    t = Tenant()
    with webhook_receiver(statuses=(500,)) as receiver:
        url = receiver.url.replace("http://", "http://bot:hunter2@") + "/s3cr3t-path-token"
        config_update(
            project=t.project,
            actor=t.users["admin"],
            now=t.world.tick(),
            escalation_webhook=url + "?token=qs-token-value",
            webhook_secret="whsec-0123456789abcdef",
        )
        t.world.integration_failed("T-1")  # a critical alert: one delivery
        now = t.world.tick()
        watch_sweep(project=t.project, now=now)
        for step in range(4):
            with django_capture_on_commit_callbacks(execute=True):
                sent = webhook_deliver_due(now=now + timezone.timedelta(hours=step))
            for s in sent:
                _no_token(s.line())
    attempts = list(WebhookAttempt.objects.filter(delivery__project=t.project))
    assert len(attempts) >= 3
    for attempt in attempts:
        _no_token(f"{attempt.url} {attempt.error}")
        assert attempt.url.endswith("/…")
    [failing] = Alert.objects.filter(project=t.project, type=Alert.Type.WEBHOOK_FAILING)
    _no_token(failing.message)
