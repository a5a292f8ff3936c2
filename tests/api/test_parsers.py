"""Numbers JSON cannot carry are a 400 naming the field, anywhere in any body (SPEC §6).

`1e400` reads as infinity in Python and PostgreSQL refuses it in jsonb: an anomaly whose
details held it was a 500. `NaN` / `Infinity` were a bare parse error naming nothing. The
agent API's JSON parser refuses all of them, with the path to the value.
"""

from __future__ import annotations

import pytest

from boards.coordination.models.records import Anomaly
from tests.api.helpers import agent_client, api_base, assert_envelope, http_start
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

LITERALS = ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"]


@pytest.fixture
def world():
    return World(now=http_start())


def _post(client, url: str, raw: str):
    return client.post(url, data=raw, content_type="application/json")


@pytest.mark.parametrize("literal", LITERALS)
def test_an_anomaly_detail_that_is_not_finite_is_refused_by_field(world, literal):
    client = agent_client(world.agent("code-reviewer-1"))
    raw = '{"type": "retry_loop", "details": {"count": LITERAL, "error_pattern": "boom"}}'
    raw = raw.replace("LITERAL", literal)

    response = _post(client, f"{api_base(world.project.slug)}/anomalies", raw)

    body = assert_envelope(response, 400, "validation_error")
    assert body["details"]["fields"] == {
        "details": {"count": [f"{literal} is not a finite number (JSON cannot carry it)"]}
    }
    assert body["message"].startswith("details: count: ")
    assert not Anomaly.objects.filter(project=world.project).exists()


@pytest.mark.parametrize(
    ("path", "raw", "fields"),
    [
        # inside a list, deep in a body
        (
            "anomalies",
            '{"type": "trade_off", "details": {"what": "w", "why": "y", '
            '"debt_created": [1, {"size": 1e999}]}}',
            {"details": {"debt_created": {"1": {"size": ["1e999 is not a finite number (JSON "
                                                         "cannot carry it)"]}}}},
        ),
        # a top-level field of another endpoint
        (
            "agents/heartbeat",
            '{"context_percent": -Infinity}',
            {"context_percent": ["-Infinity is not a finite number (JSON cannot carry it)"]},
        ),
        # the whole body
        ("agents/heartbeat", "NaN", {"non_field_errors": [
            "NaN is not a finite number (JSON cannot carry it)"]}),
    ],
)  # fmt: skip
def test_anywhere_in_any_body(world, path, raw, fields):
    client = agent_client(world.agent("code-reviewer-1"))
    response = _post(client, f"{api_base(world.project.slug)}/{path}", raw)
    body = assert_envelope(response, 400, "validation_error")
    assert body["details"]["fields"] == fields


def test_large_finite_numbers_still_pass(world):
    client = agent_client(world.agent("code-reviewer-1"))
    raw = '{"type": "retry_loop", "details": {"count": 1e300, "error_pattern": "-0.0"}}'
    response = _post(client, f"{api_base(world.project.slug)}/anomalies", raw)
    assert response.status_code == 201, response.json()
    assert float(Anomaly.objects.get(project=world.project).details["count"]) == 1e300
