"""The watcher's alerts over the API (SPEC §9): listed with filters, acknowledged by admins."""

from __future__ import annotations

import pytest

from boards.coordination.models.records import Alert, Event
from boards.protocol import Action
from boards.watch.services.watch import watch_sweep
from tests.api.helpers import (
    api_base,
    assert_envelope,
    assert_field_error,
    session_client,
)
from tests.api.test_role_matrix import Tenant

pytestmark = pytest.mark.django_db


def _two_alerts(t: Tenant) -> tuple[Alert, Alert]:
    t.world.drive_to("BLOCKED", "t1")
    t.world.drive_to("INTEGRATION_FAILED", "t2", coder="coder-2")
    watch_sweep(project=t.project, now=t.world.tick())
    return (
        Alert.objects.get(project=t.project, type=Alert.Type.BLOCKED),
        Alert.objects.get(project=t.project, type=Alert.Type.INTEGRATION_FAILED),
    )


def test_alerts_are_listed_and_filtered_by_state_type_and_severity():
    t = Tenant()
    blocked, failed = _two_alerts(t)
    client = session_client(t.users["viewer"])
    url = f"{api_base(t.slug)}/alerts"

    listed = client.get(url).json()
    assert {a["id"] for a in listed} == {blocked.pk, failed.pk}
    row = next(a for a in listed if a["id"] == blocked.pk)
    assert (row["type"], row["subject"], row["severity"], row["task"], row["open"]) == (
        "blocked",
        "t1",
        "warning",
        "t1",
        True,
    )
    assert row["count"] == 1 and row["acknowledged_by"] is None
    assert [a["id"] for a in client.get(url, {"severity": "critical"}).json()] == [failed.pk]
    assert [a["id"] for a in client.get(url, {"type": "blocked"}).json()] == [blocked.pk]
    assert client.get(url, {"state": "resolved"}).json() == []
    assert len(client.get(url, {"state": "open"}).json()) == 2
    for name, value in (("severity", "loud"), ("type", "fire"), ("state", "maybe")):
        assert_field_error(client.get(url, {name: value}), name)


def test_an_admin_acknowledges_an_alert_once_and_it_is_audited():
    t = Tenant()
    blocked, _ = _two_alerts(t)
    url = f"{api_base(t.slug)}/alerts/{blocked.pk}/acknowledge"

    assert_envelope(session_client(t.users["member"]).post(url), 403, "permission_denied")
    assert Alert.objects.get(pk=blocked.pk).acknowledged_at is None
    assert Event.objects.filter(  # the refusal is audited too
        project=t.project, action="alert_acknowledge_failed", outcome=Event.Outcome.REJECTED
    ).exists()

    admin = session_client(t.users["admin"])
    response = admin.post(url)
    assert response.status_code == 200, response.json()
    assert response.json()["acknowledged_by"] == t.users["admin"].username
    assert response.json()["open"] is True  # acknowledged, still open until the condition clears
    [event] = Event.objects.filter(
        project=t.project, action=Action.ALERT_ACKNOWLEDGED, outcome=Event.Outcome.APPLIED
    )
    assert (event.actor_kind, event.actor_id) == ("human", t.users["admin"].username)
    assert event.task == blocked.task

    error = assert_envelope(admin.post(url), 409, "conflict")
    assert "already acknowledged" in error["message"]
    assert_envelope(admin.post(f"{api_base(t.slug)}/alerts/999999/acknowledge"), 404, "not_found")
