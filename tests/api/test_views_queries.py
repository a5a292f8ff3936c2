"""The API's reads refuse a query parameter they cannot use (boards.api.views: the task filter,
the events' cursor, `/work`'s role; a null character anywhere) with a 400 naming it."""

from __future__ import annotations

import pytest

from tests.api.helpers import agent_client, api_base, assert_field_error, http_goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


BAD_QUERIES = [
    ("tasks?status=DONE", "status"),
    ("tasks?priority=high", "priority"),
    ("tasks?q=%00", "q"),
    ("events?after=yesterday", "after"),
    ("events?task=t%00", "task"),
    ("work?role=boss", "role"),
]


@pytest.mark.parametrize(("query", "field"), BAD_QUERIES)
def test_bad_query_parameters_are_400_naming_them(world, query, field):
    response = agent_client(world.coder).get(f"{api_base(world.project.slug)}/{query}")
    assert_field_error(response, field)
