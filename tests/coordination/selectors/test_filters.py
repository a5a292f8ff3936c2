"""The task filter (boards/coordination/selectors/filters.py) on the shared cases of
tests/data/task_filter_cases.json, which tests/js/board_rules.test.mjs runs through board.js's
own filter: the server's answer, what the page hands board.js, and what a live event carries
are pinned here, so the two filters cannot drift apart."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.http import QueryDict
from django.urls import reverse

from boards.board.live.render import render_changes
from boards.board.selectors.board import BoardFilters, board_tasks, live_filters
from boards.coordination.models.projects import Sprint
from boards.coordination.outbox import TASK
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_abort, sprint_create
from boards.protocol import SprintStatus
from tests.board.live.helpers import in_memory_layer_settings
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

CASES = json.loads(
    (Path(__file__).parents[2] / "data" / "task_filter_cases.json").read_text(encoding="utf-8")
)
# The steps that take a coder (`drive_to` passes it on); the rest take none.
_WITH_CODER = {"CLAIMED", "READY_FOR_REVIEW", "BLOCKED", "MERGED"}


@pytest.fixture
def world() -> World:
    """The file's tasks, goal and sprints, made through the services in the file's order."""
    world = World()
    goal = None
    for task in CASES["tasks"]:
        if task["goal"] and goal is None:
            goal = goal_create(
                project=world.project,
                actor=world.planner,
                description="Shared filter cases",
                goal_id=task["goal"],
                now=world.tick(),
            )
        fields = {
            "description": task["description"],
            "priority": task["priority"],
            "criticality": task["criticality"],
        }
        if task["status"] in _WITH_CODER:
            fields["coder"] = task["assigned_to"]
        world.drive_to(task["status"], task["key"], **fields)
    for sprint in CASES["sprints"]:
        made = sprint_create(
            project=world.project,
            actor=world.planner,
            goal=goal,
            planned=sprint["planned"],
            stretch=sprint["stretch"],
            sprint_id=sprint["sprint_id"],
            now=world.tick(),
        )
        if not sprint["open"]:
            sprint_abort(sprint=made, actor=world.admin, reason="the next one", now=world.tick())
    return world


def _open_sprint(world: World) -> Sprint | None:
    return Sprint.objects.filter(project=world.project, status=SprintStatus.IN_PROGRESS).first()


def test_the_shared_tasks_are_what_a_live_event_carries(world):
    """The node test feeds `matches()` the file's tasks: they must be the live payloads."""
    changes = [{"kind": TASK, "id": world.task(t["key"]).pk} for t in CASES["tasks"]]
    carried = [change["task"] for change in render_changes(world.project.pk, changes)]
    assert carried == CASES["tasks"]


def test_the_board_filters_as_each_shared_case_says(world):
    """Through the shared TaskFilter on PostgreSQL: the tasks shown and the cleaned filters
    the page gives board.js. One world for every case (each costs a query, the world ~1 s);
    every disagreeing case is named."""
    sprint = _open_sprint(world)
    wrong = {}
    for case in CASES["cases"]:
        filters = BoardFilters.from_query(QueryDict(case["query"]))
        shown = board_tasks(project=world.project, filters=filters, sprint=sprint)
        got = {
            "matches": sorted(shown.values_list("key", flat=True)),
            "applied": live_filters(filters=filters, sprint=sprint),
        }
        if got != {"matches": case["matches"], "applied": case["applied"]}:
            wrong[case["name"]] = got
    assert wrong == {}


def test_the_page_hands_board_js_the_applied_filters(world, client, settings):
    """The board page's data-filters, as board.js reads it, for every case (one world)."""
    client.force_login(world.admin)
    url = reverse("board", args=[world.project.slug])
    with in_memory_layer_settings(settings):
        for case in CASES["cases"]:
            page = client.get(f"{url}?{case['query']}").content.decode()
            found = re.search(r'id="board"[^>]* data-filters="([^"]*)"', page)
            assert found, case["name"]
            assert json.loads(unescape(found.group(1))) == case["applied"], case["name"]
