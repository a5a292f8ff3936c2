"""What every API view checks first (boards.api.base.ProjectView): a null character in a
path's name is the 404 of a missing object, never a database error."""

from __future__ import annotations

import pytest

from tests.api.helpers import api_base, assert_envelope, http_goal_world, session_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


@pytest.mark.parametrize(
    "path", ["tasks/t%00", "tasks/t%00/claim", "agents/coder%00", "keys/ab%00/revoke"]
)
def test_a_null_character_in_a_path_is_just_not_found(world, path):
    client = session_client(world.admin)
    response = client.post(f"{api_base(world.project.slug)}/{path}", {}, format="json")
    if response.status_code == 405:  # GET-only route
        response = client.get(f"{api_base(world.project.slug)}/{path}")
    assert_envelope(response, 404, "not_found")
