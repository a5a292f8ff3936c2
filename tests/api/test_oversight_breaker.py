"""The circuit breaker over the API: what it shows, and the resolution's input and state rules
(the role matrix is in test_role_matrix.py)."""

from __future__ import annotations

import pytest

from boards.coordination.models.records import CircuitBreaker
from tests.api.helpers import api_base, assert_envelope, assert_field_error, session_client
from tests.api.test_role_matrix import Tenant
from tests.watch.breaker_fixtures import trip

pytestmark = pytest.mark.django_db


def test_the_breaker_shows_its_trigger_report_and_history():
    t = Tenant()
    client = session_client(t.users["viewer"])
    url = f"{api_base(t.slug)}/circuit-breaker"
    assert client.get(url).json() == {
        "status": "OK",
        "last_check": None,
        "current_trigger": None,
        "report": None,
        "history": [],
    }

    trip(t.world)
    body = client.get(url).json()
    assert body["status"] == "TRIGGERED"
    assert body["current_trigger"]["pattern"] == "external_service_outage"
    report = body["report"]
    assert (report["pattern"], report["severity"]) == (
        "external_service_outage",
        "EXTERNAL_DEPENDENCY",
    )
    assert report["evidence"][0]["value"] == "payment-gateway-api"
    assert report["evidence"][0]["count"] == 2
    assert [a["type"] for a in report["anomalies"]] == ["external_blocker"] * 2
    assert len(report["checklist"]) == 5
    [entry] = body["history"]
    assert (entry["pattern"], entry["result"], entry["severity"], entry["resolution"]) == (
        "external_service_outage",
        "TRIGGERED",
        "EXTERNAL_DEPENDENCY",
        None,
    )


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": None}])
def test_a_resolution_without_a_written_reason_is_a_400(body):
    t = Tenant()
    trip(t.world)
    response = session_client(t.users["admin"]).post(
        f"{api_base(t.slug)}/circuit-breaker/resolve", body, format="json"
    )
    assert_field_error(response, "reason")
    assert CircuitBreaker.objects.get(project=t.project).status == "TRIGGERED"


def test_resolving_a_breaker_that_is_not_triggered_is_a_409():
    t = Tenant()
    response = session_client(t.users["admin"]).post(
        f"{api_base(t.slug)}/circuit-breaker/resolve", {"reason": "why not"}, format="json"
    )
    error = assert_envelope(response, 409, "conflict")
    assert "not triggered" in error["message"]
