"""The insights selector's one SQL statement (`_flow_sql`) gives the figures of the reference
walk of the state history (tests/insights/selectors/insights_oracle.py), on the hand-computed
history and over periods that cut stays at both ends, leave stays ongoing, or scope to a
sprint."""

from __future__ import annotations

from datetime import date

import pytest

from boards.coordination.services.sprints import sprint_create
from boards.insights.selectors.figures import insights_period
from boards.insights.selectors.insights import Period, _flow_sql
from tests.insights.selectors.insights_oracle import flow_reference
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
def test_the_sql_gives_the_reference_figures(db, period):
    world = build_history()
    tasks, python = flow_reference(world.project, period)
    assert tasks == 4
    sql = _flow_sql(world.project, period)
    assert sql == python
    # Not vacuous: the history gives every period something to count.
    assert any(any(deltas) for deltas in sql.steps.values())


def test_the_sql_gives_the_reference_figures_of_a_sprint(db):
    world = build_history()
    sprint = sprint_create(
        project=world.project, actor=world.planner, planned=["B", "C"], now=moment(8, 0)
    )
    period = insights_period(
        now=moment(9, 0), sprint=sprint, start=date(2026, 1, 5), end=date(2026, 1, 7)
    )
    tasks, python = flow_reference(world.project, period)
    assert tasks == 2
    assert _flow_sql(world.project, period) == python
    assert python.merged_on and python.rounds
