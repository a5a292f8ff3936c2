"""Text PostgreSQL cannot store is a 400 naming where it sits, at any depth of any body (#27).

`"\\ud800"` is valid JSON but a lone UTF-16 surrogate, which UTF-8 cannot encode: inside an
anomaly's `details` or the config's `state_timeouts` it reached the database and answered 500
(`DataError: invalid input syntax for type json`); plain text fields already gave 400. The
agent API's JSON parser refuses it (and NUL) in values and keys, with the path to it.
"""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Project
from boards.coordination.models.records import Anomaly
from boards.coordination.selectors.access import config_of
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    http_start,
    session_client,
)
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

SURROGATE = "text holds a lone UTF-16 surrogate, which is not encodable text"


@pytest.fixture
def world():
    return World(now=http_start())


def _post(client, url: str, raw: str, method: str = "post"):
    return getattr(client, method)(url, data=raw, content_type="application/json")


@pytest.mark.parametrize(
    ("raw", "fields"),
    [
        # the finding: a value inside the details object
        (
            '{"type": "retry_loop", "details": {"count": 3, "error_pattern": "x\\ud800"}}',
            {"details": {"error_pattern": [SURROGATE]}},
        ),
        # a low surrogate alone, deep in a list
        (
            '{"type": "trade_off", "details": {"what": "w", "why": "y", '
            '"debt_created": [1, {"size": ["\\udfff"]}]}}',
            {"details": {"debt_created": {"1": {"size": {"0": [SURROGATE]}}}}},
        ),
        # a key: the error names it with the surrogate spelt out, so the answer is encodable
        (
            '{"type": "retry_loop", "details": {"count": 3, "error_pattern": "p", "\\ud83d": 1}}',
            {"details": {"\\ud83d": [f"a key: {SURROGATE}"]}},
        ),
        # NUL deep inside: jsonb refuses it as well
        (
            '{"type": "retry_loop", "details": {"count": 3, "error_pattern": ["a\\u0000"]}}',
            {"details": {"error_pattern": {"0": ["null characters are not allowed"]}}},
        ),
        # a plain text field, as before
        ('{"type": "retry_loop\\udc00", "details": {}}', {"type": [SURROGATE]}),
    ],
)
def test_an_anomaly_with_unencodable_text_is_a_400_naming_the_place(world, raw, fields):
    client = agent_client(world.agent("code-reviewer-1"))
    response = _post(client, f"{api_base(world.project.slug)}/anomalies", raw)
    body = assert_envelope(response, 400, "validation_error")
    assert body["details"]["fields"] == fields
    assert not Anomaly.objects.filter(project=world.project).exists()


def test_a_config_object_with_a_surrogate_is_a_400(world):
    """The finding's second place: `state_timeouts` (a JSON object setting)."""
    admin = session_client(world.admin)
    raw = '{"state_timeouts": {"CLAIMED": {"seconds": 60, "reason": "slow \\ud800"}}}'
    response = _post(admin, f"{api_base(world.project.slug)}/config", raw, method="patch")
    body = assert_envelope(response, 400, "validation_error")
    assert body["details"]["fields"] == {"state_timeouts": {"CLAIMED": {"reason": [SURROGATE]}}}
    assert config_of(Project.objects.get(pk=world.project.pk)).state_timeouts == {}


def test_a_surrogate_pair_is_text_and_passes(world):
    """`"\\ud83d\\ude00"` is one character (😀), not a lone surrogate."""
    client = agent_client(world.agent("code-reviewer-1"))
    raw = '{"type": "retry_loop", "details": {"count": 3, "error_pattern": "\\ud83d\\ude00"}}'
    response = _post(client, f"{api_base(world.project.slug)}/anomalies", raw)
    assert response.status_code == 201, response.json()
    assert Anomaly.objects.get(project=world.project).details["error_pattern"] == "😀"
