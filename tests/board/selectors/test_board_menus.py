"""The board's filter menus (`board_header`'s `menus`): every sprint and goal id of the project,
each in its model's order, read in the header's statement."""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards.board.selectors.board import board_header
from boards.coordination.models.projects import Goal, Sprint
from boards.protocol import GoalStatus, SprintStatus
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db
# At most one goal of a project is in progress,
DONE = GoalStatus.COMPLETED
ENDED = SprintStatus.COMPLETED  # and of its sprints, one open


def test_the_menus_are_the_projects_sprints_and_goals_in_their_models_order():
    project, other = ProjectFactory(), ProjectFactory()
    assert board_header(project=project)["menus"] == {"sprints": [], "goals": []}
    goals = [
        Goal.objects.create(
            project=project, goal_id=name, description=name, created=T0 + at, status=DONE
        )
        for name, at in (
            ("goal-b", timedelta(0)),
            ("goal-a", timedelta(0)),
            ("goal-c", -T0.resolution),
        )
    ]
    Goal.objects.create(project=other, goal_id="goal-other", description="x", created=T0)
    for name, started in (("s-late", T0), ("s-none", None), ("s-early", T0 - timedelta(days=1))):
        Sprint.objects.create(
            project=project, sprint_id=name, goal=goals[0], started=started, status=ENDED
        )
    menus = board_header(project=project)["menus"]
    assert menus == {
        "sprints": list(Sprint.objects.filter(project=project).values_list("sprint_id", flat=True)),
        "goals": list(Goal.objects.filter(project=project).values_list("goal_id", flat=True)),
    }
    assert menus == {
        "sprints": ["s-early", "s-late", "s-none"],
        "goals": ["goal-c", "goal-b", "goal-a"],
    }
