"""What every API view checks first (boards.api.base.ProjectView): a null character in a
path's name is the 404 of a missing object, never a database error; a person's project and role
are read in one statement; a `Liza-Generation` that is not a positive integer is a 400 naming
the header."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boards.coordination.models.projects import Membership, Project
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    assert_field_error,
    http_goal_world,
    session_client,
)

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


def test_a_persons_request_reads_the_project_and_their_role_in_one_statement(world):
    """Tenancy for a person (a member, not site staff: their role is the membership's) is one
    statement, `selectors.access.project_with_role`, not a project query and a membership query
    compiled by the ORM on every request."""
    assert not world.admin.is_staff
    client = session_client(world.admin)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"{api_base(world.project.slug)}/tasks")
    assert response.status_code == 200
    tables = [f'"{Project._meta.db_table}"', f'"{Membership._meta.db_table}"']
    reads = [q["sql"] for q in queries if any(table in q["sql"] for table in tables)]
    assert len(reads) == 1, reads
    assert all(table in reads[0] for table in tables)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5", "9" * 19, "\u0661"])
def test_a_generation_header_that_is_no_positive_integer_is_a_400_naming_it(world, value):
    """Both ways: the hot path (the heartbeat) and DRF's (an operation, `agents/leave`)."""
    client, base = agent_client(world.coder), api_base(world.project.slug)
    for path in ("agents/heartbeat", "agents/leave"):
        response = client.post(
            f"{base}/{path}", {}, format="json", headers={"Liza-Generation": value}
        )
        assert_field_error(response, "Liza-Generation")
    assert world.agent("coder-1").left_at is None
