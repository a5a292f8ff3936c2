"""The insights selector's two paths (issue #13): the per-stay work in one SQL statement on
PostgreSQL (`_flow_sql`) and in Python on the state history (`_flow_python`, the embedded
SQLite's path) give the same figures, on the hand-computed history and over periods that cut
stays at both ends, leave stays ongoing, or scope to a sprint."""

from __future__ import annotations

from datetime import date

import pytest

from boards.selectors.insights import Period, _flow_python, _flow_sql, insights_period
from boards.services.sprints import sprint_create
from tests.insights_history import build_history, moment

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "period",
    [
        Period(moment(5, 0), moment(8, 0)),  # the three whole days
        Period(moment(7, 0), moment(8, 0)),  # one day: earlier stays cut at the start
        Period(moment(5, 0), moment(6, 13, 30)),  # ends mid-day: stays ongoing at its end
        Period(moment(1, 0), moment(9, 0)),  # empty days before the history
        Period(moment(20, 0), moment(21, 0)),  # after it: everything ongoing or terminal
    ],
    ids=["three-days", "last-day", "mid-day", "wider", "after"],
)
def test_the_sql_and_python_paths_agree(db, period):
    world = build_history()
    tasks, python = _flow_python(world.project, period)
    assert tasks == 4
    sql = _flow_sql(world.project, period)
    assert sql == python
    # Not vacuous: the history gives every period something to count.
    assert any(any(deltas) for deltas in sql.steps.values())


def test_the_paths_agree_on_a_sprint(db):
    world = build_history()
    sprint = sprint_create(
        project=world.project, actor=world.planner, planned=["B", "C"], now=moment(8, 0)
    )
    period = insights_period(
        now=moment(9, 0), sprint=sprint, start=date(2026, 1, 5), end=date(2026, 1, 7)
    )
    tasks, python = _flow_python(world.project, period)
    assert tasks == 2
    assert _flow_sql(world.project, period) == python
    assert python.merged_on and python.rounds
