"""The board header's numbers (`board_header`): the blocked and alert counts and the sprint's
metrics, seed 002's `sprint_metrics` while the sprint is open and its snapshot once it ended,
read in one statement beside the header's rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boards.board.selectors.board import board_header
from boards.coordination.models.projects import Sprint
from boards.coordination.selectors.sprints import sprint_current, sprint_metrics
from boards.coordination.services.sprints import sprint_abort
from tests.board.live.helpers import sprint_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    world = sprint_world()
    world.approved("t-approved", sprint_scope="planned")
    world.claimed("t-claimed", sprint_scope="planned")
    world.unclaimed("t-unclaimed", sprint_scope="planned")
    return world


def test_an_open_sprints_metrics_are_counted_with_the_headers_numbers(world):
    sprint = sprint_current(project=world.project)
    with CaptureQueriesContext(connection) as queries:
        header = board_header(project=world.project)
    # The rows (sprint, breaker, goal, menus), then the counts with the metrics.
    assert len(queries) == 2
    assert header["metrics"] == sprint_metrics(sprint)
    assert header["metrics"]["tasks_in_progress"] == 2
    assert header["metrics"]["review_verdict_approvals"] == 1
    assert header["counts"] == {"blocked": 0}
    assert board_header(project=world.project, metrics=False)["metrics"] is None


def test_an_ended_sprints_metrics_are_its_snapshot(world):
    sprint = sprint_current(project=world.project)
    sprint_abort(sprint=sprint, actor=world.admin, reason="Replan", now=world.tick())
    snapshot = Sprint.objects.get(pk=sprint.pk).metrics
    assert snapshot
    header = board_header(project=world.project)
    assert header["sprint"].status == "ABORTED"
    assert header["metrics"] == snapshot
