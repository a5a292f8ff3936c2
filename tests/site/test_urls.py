"""liza_site.urls' handler400: a request Django refuses before any view runs (a body over
DATA_UPLOAD_MAX_MEMORY_SIZE) gets the API's error envelope."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import agent_client, api_base, assert_envelope, http_goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


def test_a_body_over_the_upload_limit_is_a_400_envelope(world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    world.claimed("t1")
    body = json.dumps({"reason": "x" * 20_000, "questions": ["q"]})
    response = agent_client(world.coder).post(
        f"{api_base(world.project.slug)}/tasks/t1/block", body, content_type="application/json"
    )
    assert_envelope(response, 400, "bad_request")
    assert world.task("t1").status == "CLAIMED"
