"""`rows.compiled`: querysets built and compiled by the ORM once per shape, the ids and moments
of each call bound where the ORM put them — the same statements as a fresh build."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from boards.board.selectors.board import BoardFilters, board_state
from boards.coordination import rows
from boards.coordination.models.tasks import Task
from tests.board.live.helpers import sprint_world

pytestmark = pytest.mark.django_db

MOMENTS = [datetime(2026, 11, 27, 9, tzinfo=UTC), datetime(2025, 1, 1, 12, 30, 1, 5, tzinfo=UTC)]


def _tasks(project_id, since):
    return [Task.objects.filter(project_id=project_id, created__gte=since).values("id").query]


def _build(project_id, since):
    return [query.sql_with_params() for query in _tasks(project_id, since)]


@pytest.mark.parametrize("project_id, since", [(1, MOMENTS[0]), (42, MOMENTS[1]), (7, MOMENTS[0])])
def test_a_kept_shape_is_the_fresh_build_with_the_calls_values(project_id, since):
    key = ("test-kept", "tasks since")
    rows.compiled(key, _build, 99, MOMENTS[1])  # the shape, built for other values
    assert rows._SHAPES[key] is not None
    assert rows.compiled(key, _build, project_id, since) == [
        (sql, list(params)) for sql, params in _build(project_id, since)
    ]


def test_a_shape_with_a_value_written_in_its_sql_is_built_every_time():
    def written(project_id):
        where = RawSQL(f"project_id = {project_id}", [], output_field=BooleanField())
        return [Task.objects.filter(where).values("id").query.sql_with_params()]

    for project_id in (3, 4):
        assert rows.compiled("test-written", written, project_id) == [
            (sql, list(params)) for sql, params in written(project_id)
        ]
    assert rows._SHAPES["test-written"] is None


def test_a_shape_that_drops_a_value_is_built_every_time():
    def ignores(project_id, since):
        return [Task.objects.filter(project_id=project_id).values("id").query.sql_with_params()]

    assert rows.compiled("test-ignores", ignores, 5, MOMENTS[0])[0][1] == [5]
    assert rows._SHAPES["test-ignores"] is None
    with pytest.raises(TypeError):
        rows.compiled("test-text", lambda name: [], "a name")


def test_two_projects_boards_of_one_shape_show_each_its_own_cards():
    first, second = sprint_world(), sprint_world()
    first.unclaimed("first-1", sprint_scope="planned")
    second.unclaimed("second-1", sprint_scope="planned")
    second.unclaimed("second-2", sprint_scope="planned")
    second.unclaimed("second-out")  # in no sprint: not on the default board
    now = second.tick() + timedelta(seconds=1)
    for world, keys in ((first, ["first-1"]), (second, ["second-1", "second-2"])):
        state = board_state(project=world.project, filters=BoardFilters(), now=now)
        column = next(c for c in state["columns"] if c.status == "UNCLAIMED")
        assert ([card.key for card in column.cards], column.count) == (keys, len(keys))
