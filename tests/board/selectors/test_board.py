"""The board's reads (boards/py, SPEC §7): filters, cards, columns, header, time in
each state. Tasks are reached through the services (tests/lifecycle.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.http import QueryDict

from boards import protocol as p
from boards.board.selectors import board as board_selectors
from boards.board.selectors.board import (
    BOARD_COLUMNS,
    BoardFilters,
    board_cards,
    board_state,
    card_for,
    card_tasks,
)
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.history import time_in_states
from boards.coordination.services import tasks
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_abort, sprint_create
from tests.board.live.helpers import sprint_world
from tests.factories import register
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


# -- filters from the query string ------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected, refused",
    [
        ("", BoardFilters(), ()),
        ("status=CLAIMED&status=BLOCKED", BoardFilters(status=("CLAIMED", "BLOCKED")), ()),
        ("status=NOPE&status=CLAIMED", BoardFilters(), ("status",)),
        ("priority=2", BoardFilters(priority=2), ()),
        ("priority=0", BoardFilters(), ("priority",)),
        ("priority=6", BoardFilters(), ("priority",)),
        ("priority=two", BoardFilters(), ("priority",)),
        ("priority=²", BoardFilters(), ("priority",)),
        ("priority=" + "9" * 30, BoardFilters(), ("priority",)),
        ("criticality=complex", BoardFilters(criticality="complex"), ()),
        ("criticality=urgent", BoardFilters(), ("criticality",)),
        ("open=MERGED&open=CLAIMED", BoardFilters(expanded=("MERGED",)), ()),
        (
            "sprint=all&goal=goal-2&agent=coder-1",
            BoardFilters("goal-2", "all", agent="coder-1"),
            (),
        ),
        ("q=" + "x" * 500, BoardFilters(), ("q",)),
        ("q=%00&goal=%00&agent=ok", BoardFilters(agent="ok"), ("goal", "q")),
    ],
)
def test_filters_are_validated_by_the_shared_task_filter(query, expected, refused):
    """The board parses its query string with the API's own TaskFilter: what it refuses is
    dropped and reported (the page answers 400 with it), never a database error."""
    filters = BoardFilters.from_query(QueryDict(query))
    assert replace(filters, errors=()) == expected
    assert tuple(sorted(name for name, _ in filters.errors)) == refused


# -- cards ------------------------------------------------------------------------------------


@pytest.fixture
def world():
    return sprint_world()


def _every_kind_of_card(world: World) -> None:
    """One task per kind of card; a coder holds one task at a time, hence a fourth coder."""
    register(world.project, "coder-4", now=world.now)
    world.unclaimed("dep-open", sprint_scope="planned")  # before the merge: the sprint stays open
    world.merged("dep-merged", sprint_scope="planned", coder="coder-3")
    world.unclaimed(
        "waiting", sprint_scope="planned", depends_on=["dep-open", "dep-merged"], priority=1
    )
    world.blocked("blocked", coder="coder-1", sprint_scope="planned")
    world.claimed("claimed", coder="coder-1", sprint_scope="planned", max_iterations=3)
    world.rejected("rejected", coder="coder-3", sprint_scope="planned", max_review_cycles=2)
    world.under_review(
        "awaiting", coder="coder-2", sprint_scope="planned", needs_human_approval=True
    )
    world.verdict("awaiting", "APPROVED")
    # Last: its reviewer keeps the review open (a reviewer holds one review at a time).
    world.under_review("reviewed", coder="coder-4", sprint_scope="stretch")
    world.unclaimed("suspended", sprint_scope="planned", criticality="complex")
    tasks.task_suspend(
        task=world.task("suspended"), actor=world.admin, reason="Legal", now=world.tick()
    )


def test_the_board_rows_and_a_single_task_give_the_same_cards(world):
    """The board reads plain rows, the drawer and live events read a Task: one set of rules."""
    _every_kind_of_card(world)
    config, now = config_of(world.project), world.tick()
    tasks = Task.objects.filter(project=world.project).order_by("key")
    from_rows = board_cards(tasks, config=config, now=now)
    from_models = [card_for(t, config, now) for t in card_tasks(tasks)]
    assert from_rows == from_models
    assert len(from_rows) == tasks.count() == 9


def test_card_rules(world):
    _every_kind_of_card(world)
    config, now = config_of(world.project), world.tick()
    cards = {
        c.key: c
        for c in board_cards(Task.objects.filter(project=world.project), config=config, now=now)
    }
    # Waiting on the dependencies not yet MERGED, by key.
    assert cards["waiting"].waiting_on == ("dep-open",)
    assert cards["dep-open"].waiting_on == ()
    # The lease shows while CLAIMED; iteration against the task's own override.
    assert cards["claimed"].lease_expires is not None
    assert (cards["claimed"].iteration, cards["claimed"].max_iterations) == (1, 3)
    assert cards["waiting"].lease_expires is None
    # The reviewer shows while their claim is alive, with its lease.
    assert cards["reviewed"].reviewing_by == ("code-reviewer-1",)
    assert cards["reviewed"].review_lease_expires is not None
    later = now + timedelta(days=1)
    expired = board_cards(Task.objects.filter(key="reviewed"), config=config, now=later)[0]
    assert expired.reviewing_by == () and expired.review_lease_expires is None
    # Review cycles against the override; the blocked reason only while BLOCKED.
    assert (cards["rejected"].review_cycles_current, cards["rejected"].max_review_cycles) == (
        1,
        2,
    )
    assert cards["blocked"].blocked_reason == "Spec is silent on errors"
    assert cards["rejected"].blocked_reason == ""
    # Oversight overlays (seed 004): the human gate and suspension.
    assert cards["awaiting"].awaiting_human_approval
    assert cards["awaiting"].reviewing_by == ()  # the approving reviewer is done
    assert not cards["reviewed"].awaiting_human_approval
    assert cards["suspended"].suspended and not cards["claimed"].suspended
    assert cards["dep-merged"].terminal and not cards["waiting"].terminal


# -- the board --------------------------------------------------------------------------------


def _keys(state) -> dict[str, list[str]]:
    return {c.status: [card.key for card in c.cards] for c in state["columns"]}


def test_the_board_shows_the_open_sprint_in_flow_order(world):
    world.unclaimed("late", sprint_scope="planned", priority=3)
    world.unclaimed("urgent", sprint_scope="planned", priority=1)
    world.unclaimed("stretch", sprint_scope="stretch", priority=2)
    world.unclaimed("backlog", priority=1)  # in no sprint
    world.merged("done", sprint_scope="planned", coder="coder-3")
    state = board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    assert [c.status for c in state["columns"]] == list(BOARD_COLUMNS)
    assert sorted(BOARD_COLUMNS) == sorted(p.TASK_STATES)
    keys = _keys(state)
    assert keys["UNCLAIMED"] == ["urgent", "stretch", "late"]  # priority first
    assert keys["MERGED"] == []  # terminal columns start collapsed ...
    merged = next(c for c in state["columns"] if c.status == "MERGED")
    assert (merged.count, merged.hidden, merged.expanded) == (1, 1, False)  # ... with a count
    assert state["total"] == 4
    assert state["sprint"].sprint_id == "sprint-1"

    opened = board_state(
        project=world.project, filters=BoardFilters(expanded=("MERGED",)), now=world.tick()
    )
    assert _keys(opened)["MERGED"] == ["done"]
    everything = board_state(
        project=world.project, filters=BoardFilters(sprint="all"), now=world.tick()
    )
    # Priority, then age: "urgent" was created before "backlog".
    assert _keys(everything)["UNCLAIMED"] == ["urgent", "backlog", "stretch", "late"]


def test_without_an_open_sprint_the_board_shows_every_task():
    world = World()
    goal = goal_create(
        project=world.project, actor=world.planner, description="Goal", now=world.tick()
    )
    sprint = sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.unclaimed("in-sprint", sprint_scope="planned")
    sprint_abort(sprint=sprint, actor=world.admin, reason="Replan", now=world.tick())
    world.unclaimed("after")
    state = board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    assert _keys(state)["UNCLAIMED"] == ["in-sprint", "after"]
    # The header still names the last sprint (ended) and the goal in progress.
    assert state["sprint"].sprint_id == "sprint-1" and state["sprint"].status == "ABORTED"
    assert state["goal"].goal_id == "goal-1"


def test_a_column_shows_its_most_urgent_cards_up_to_the_limit(world, monkeypatch):
    monkeypatch.setattr(board_selectors, "COLUMN_CARD_LIMIT", 2)
    for key, priority in (("p3", 3), ("p1", 1), ("p2", 2), ("p5", 5)):
        world.unclaimed(key, sprint_scope="planned", priority=priority)
    world.claimed("claimed", sprint_scope="planned")
    state = board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    unclaimed = next(c for c in state["columns"] if c.status == "UNCLAIMED")
    assert [c.key for c in unclaimed.cards] == ["p1", "p2"]
    assert (unclaimed.count, unclaimed.hidden) == (4, 2)
    assert _keys(state)["CLAIMED"] == ["claimed"]  # the limit is per column


def test_time_in_each_state_comes_from_the_event_log(world):
    world.claimed("task-1", sprint_scope="planned")  # draft, finalize, claim: 1 s apart
    task = world.task("task-1")
    spent = dict(time_in_states(task=task, now=world.now + timedelta(seconds=30)))
    assert spent == {"DRAFT": 1.0, "UNCLAIMED": 1.0, "CLAIMED": 30.0}


# -- issue #13: what a card shows, swimlanes, WIP limits -------------------------------------


def test_card_fields_of_issue_13(world):
    _every_kind_of_card(world)
    world.unclaimed("two-lines", sprint_scope="planned", description="First line\nSecond line")
    config, now = config_of(world.project), world.tick()
    cards = {
        c.key: c
        for c in board_cards(Task.objects.filter(project=world.project), config=config, now=now)
    }
    assert cards["two-lines"].summary == "First line"
    # The approval gate shows from the start, pending or not; "awaiting" only once approved.
    assert cards["awaiting"].approval_gate and cards["awaiting"].awaiting_human_approval
    assert not cards["claimed"].approval_gate
    # Age in state: the last applied transition into the current state, from the event log.
    claimed = world.task("claimed")
    entered = (
        claimed.events.filter(to_status="CLAIMED", outcome="applied").latest("timestamp").timestamp
    )
    assert cards["claimed"].entered == p.format_timestamp(entered)
    assert cards["waiting"].entered is not None
    # The order string sorts like the board's query (priority, created, id).
    ordered = board_cards(
        Task.objects.filter(project=world.project).order_by("priority", "created", "id"),
        config=config,
        now=now,
    )
    assert [c.order for c in ordered] == sorted(c.order for c in ordered)
    assert len({c.order for c in ordered}) == len(ordered)


def test_tasks_without_a_goal_sprint_or_assignee_share_the_last_lane():
    world = World()
    goal = goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.unclaimed("in-sprint", sprint_scope="stretch")  # a stretch task has its sprint's lane
    world.unclaimed("loose")
    Task.objects.filter(project=world.project).update(goal=None)  # test setup: no goal at all
    for by, first in (("goal", ""), ("sprint", "sprint-1"), ("assignee", "")):
        state = board_state(
            project=world.project,
            filters=BoardFilters(sprint="all", lanes=by),
            now=world.tick(),
        )
        lanes = {
            lane.key: [k.key for c in lane.columns for k in c.cards] for lane in state["lanes"]
        }
        assert next(iter(lanes)) == first, (by, lanes)
        assert sorted(k for keys in lanes.values() for k in keys) == ["in-sprint", "loose"]


@pytest.mark.parametrize(
    "by, expected",
    [
        (
            "assignee",
            {
                "coder-1": {"CLAIMED": ["c1"]},
                "coder-2": {"CLAIMED": ["c2"]},
                "coder-3": {"BLOCKED": ["b3"]},
                "": {"UNCLAIMED": ["u1", "u2"]},
            },
        ),
        (
            "goal",
            {"goal-1": {"UNCLAIMED": ["u1", "u2"], "CLAIMED": ["c1", "c2"], "BLOCKED": ["b3"]}},
        ),
        (
            "sprint",
            {"sprint-1": {"UNCLAIMED": ["u1", "u2"], "CLAIMED": ["c1", "c2"], "BLOCKED": ["b3"]}},
        ),
    ],
)
def test_swimlanes_group_the_columns_cards(world, by, expected, django_assert_max_num_queries):
    world.unclaimed("u2", sprint_scope="planned", priority=2)
    world.unclaimed("u1", sprint_scope="planned", priority=1)
    world.claimed("c1", coder="coder-1", sprint_scope="planned")
    world.claimed("c2", coder="coder-2", sprint_scope="stretch")
    world.blocked("b3", coder="coder-3", sprint_scope="planned")
    plain = board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    assert plain["lanes"] == []
    with django_assert_max_num_queries(len(_queries_of(world)) + 1):
        state = board_state(project=world.project, filters=BoardFilters(lanes=by), now=world.tick())
    got = {
        lane.key: {c.status: [card.key for card in c.cards] for c in lane.columns if c.cards}
        for lane in state["lanes"]
    }
    assert got == expected
    assert list(got) == sorted(got, key=lambda k: (k == "", k))  # none last
    for lane in state["lanes"]:
        # Each lane has a cell for every shown column, with its count in that lane.
        assert [c.status for c in lane.columns] == [
            s for s in BOARD_COLUMNS if s not in p.TERMINAL_TASK_STATES
        ]
        assert all(c.count == len(c.cards) for c in lane.columns)
        assert lane.count == sum(len(v) for v in got[lane.key].values())


def _queries_of(world) -> list[str]:
    """The queries of the board without swimlanes (lanes add at most one)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    return queries.captured_queries


@pytest.mark.parametrize("lanes", ["", "goal", "sprint", "assignee"])
def test_the_board_state_is_constant_in_queries(world, lanes, django_assert_max_num_queries):
    """Five tasks or fifty: the same number of queries, swimlanes or not."""
    from tests.board.web.helpers import bulk_tasks

    bulk_tasks(world, 5, list(p.TASK_STATES), prefix="few")
    filters = BoardFilters(lanes=lanes, expanded=tuple(p.TERMINAL_TASK_STATES))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        board_state(project=world.project, filters=filters, now=world.tick())
    bulk_tasks(world, 50, list(p.TASK_STATES), prefix="many")
    with django_assert_max_num_queries(len(few.captured_queries)):
        state = board_state(project=world.project, filters=filters, now=world.tick())
    assert state["total"] == 55


def test_wip_limits_mark_columns_and_only_claimed_is_enforced(world):
    """CLAIMED's limit is enforced at claim (issue 24); a column can still be over its limit
    (lowered after the cards were there), and the board marks it; other columns are shown."""
    from boards.coordination.services.projects import config_update
    from boards.errors import LimitReached

    world.claimed("c1", coder="coder-1", sprint_scope="planned")
    world.claimed("c2", coder="coder-2", sprint_scope="planned")
    world.unclaimed("c3", sprint_scope="planned")
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        wip_limits={"CLAIMED": 1, "UNCLAIMED": 1},
    )
    world.project.refresh_from_db()
    with pytest.raises(LimitReached):  # over the limit: refused
        world.claim("c3", "coder-3")
    state = board_state(project=world.project, filters=BoardFilters(), now=world.tick())
    columns = {c.status: c for c in state["columns"]}
    assert (columns["CLAIMED"].count, columns["CLAIMED"].limit) == (2, 1)
    assert columns["CLAIMED"].over_limit
    assert columns["UNCLAIMED"].limit == 1 and not columns["UNCLAIMED"].over_limit


@pytest.mark.parametrize(
    "value, error",
    [
        ({"CLAIMED": 3, "BLOCKED": 2}, ""),
        ({}, ""),
        ({"MERGED": 3}, "not a column with a WIP limit"),
        ({"NOPE": 3}, "not a column with a WIP limit"),
        ({"CLAIMED": 0}, "whole number from 1"),
        ({"CLAIMED": True}, "whole number from 1"),
        ({"CLAIMED": "3"}, "whole number from 1"),
        ({"CLAIMED": 10_001}, "whole number from 1"),
        ([3], "a map of column to limit"),
    ],
)
def test_wip_limit_values(value, error):
    assert (p.wip_limits_error(value) == "") == (error == "")
    assert error in p.wip_limits_error(value)


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("CLAIMED=3, BLOCKED=2", {"CLAIMED": 3, "BLOCKED": 2}),
        ("claimed = 3; blocked=2", {"CLAIMED": 3, "BLOCKED": 2}),
        ("", {}),
        ("CLAIMED=x", {"CLAIMED": "x"}),  # refused by wip_limits_error, named
        ("CLAIMED=²", {"CLAIMED": "²"}),
    ],
)
def test_wip_limits_form_spelling(text, parsed):
    assert p.wip_limits_parse(text) == parsed
    if not p.wip_limits_error(parsed):
        assert p.wip_limits_parse(p.wip_limits_text(parsed)) == parsed


def test_the_header_rows_are_the_selectors_own(world):
    """The header reads the current sprint, the breaker and the current goal in one statement:
    each what its own selector answers (none yet, then each one's row)."""
    from boards.coordination.selectors.breaker import breaker_status
    from boards.coordination.selectors.sprints import goal_current, sprint_current

    def selectors(project):
        return (
            sprint_current(project=project),
            breaker_status(project=project),
            goal_current(project=project),
        )

    empty = World().project
    sprint, breaker, goal = board_selectors.header_rows(project=empty)
    assert (sprint, goal) == (None, None)
    assert breaker.status == selectors(empty)[1].status
    together = board_selectors.header_rows(project=world.project)
    apart = selectors(world.project)
    assert all(row is not None for row in apart)
    for mine, theirs in zip(together, apart, strict=True):
        values = [f.attname for f in type(theirs)._meta.concrete_fields]
        assert [getattr(mine, f) for f in values] == [getattr(theirs, f) for f in values]
