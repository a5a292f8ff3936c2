"""A body the API cannot read (boards.api.parsers: not JSON, not an object, nested too deep,
not UTF-8, a lone surrogate, another media type) gets the error envelope, never a 500, and
changes nothing."""

from __future__ import annotations

import pytest

from tests.api.helpers import agent_client, api_base, domain_snapshot, http_goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


RAW_BODIES = [
    # (raw body, content type, status, code)
    ("{not json", "application/json", 400, "parse_error"),
    ("[1, 2]", "application/json", 400, "validation_error"),
    ('"a string"', "application/json", 400, "validation_error"),
    ("null", "application/json", 400, "validation_error"),
    ("[" * 50_000 + "]" * 50_000, "application/json", 400, "parse_error"),
    ('{"reason": "' + "\\ud800" + '", "questions": ["q"]}', "application/json", 400, None),
    (b"\xff\xfe\x00 not utf-8", "application/json", 400, "parse_error"),
    ("reason=r", "text/plain", 415, "unsupported_media_type"),
]


@pytest.mark.parametrize(("raw", "content_type", "status", "code"), RAW_BODIES)
def test_malformed_bodies_get_the_envelope_never_a_500(world, raw, content_type, status, code):
    world.claimed("t1")
    client = agent_client(world.coder)
    before = domain_snapshot(world.project)
    response = client.post(
        f"{api_base(world.project.slug)}/tasks/t1/block", raw, content_type=content_type
    )
    assert response.status_code == status, response.content[:300]
    error = response.json()["error"]
    if code is not None:
        assert error["code"] == code, error
    assert domain_snapshot(world.project) == before
