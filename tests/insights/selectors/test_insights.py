"""Insights (issue #13) on a hand-computed history: four tasks walked through the services at
fixed moments over three days; every figure below was computed by hand from the script in
`history` (docs/decisions.md "Insights" gives the definitions)."""

from __future__ import annotations

from datetime import UTC, date, timedelta

import pytest

from boards import protocol as p
from boards.coordination.models.records import Alert
from boards.coordination.selectors.access import config_of
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.insights.selectors.figures import insights_period, percentile
from boards.insights.selectors.insights import (
    Period,
    agent_figures,
    insights,
)
from boards.watch.services.watch import watch_sweep
from tests.insights_history import build_history, moment
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(db) -> World:
    return build_history()


def period() -> Period:
    # Jan 5 to Jan 7, whole days: the period ends Jan 8 00:00.
    return insights_period(now=moment(9, 0), start=date(2026, 1, 5), end=date(2026, 1, 7))


def test_the_period_is_whole_utc_days_and_defaults_to_the_last_fourteen():
    assert period() == Period(moment(5, 0), moment(8, 0))
    assert [d.day for d in period().days] == [5, 6, 7]
    default = insights_period(now=moment(20, 15, 30))
    assert default.start == moment(7, 0) and default.end == moment(20, 15, 30)
    assert len(default.days) == 14
    # An end in the future stops at now; a start after the end is the end's day.
    assert insights_period(now=moment(9, 6), end=date(2026, 2, 1)).end == moment(9, 6)
    swapped = insights_period(now=moment(9, 6), start=date(2026, 1, 9), end=date(2026, 1, 3))
    assert swapped.days == [date(2026, 1, 3)]


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([], 50, None), ([7], 90, 7), ([1, 2], 50, 1.5), ([600, 1800, 3600, 302400], 90, 212760)],
)
def test_percentiles_interpolate_between_closest_ranks(values, q, expected):
    assert percentile(values, q) == expected


def test_cumulative_flow_counts_each_state_at_the_end_of_each_day(history):
    data = insights(project=history.project, period=period())
    assert data.tasks == 4
    expected = [
        (moment(6, 0), {"DRAFT": 1, "REJECTED": 1}),
        (moment(7, 0), {"DRAFT": 1, "APPROVED": 1, "MERGED": 1}),
        (moment(8, 0), {"DRAFT": 1, "BLOCKED": 1, "MERGED": 2}),
    ]
    assert [(at_, {s: n for s, n in counts.items() if n}) for at_, counts in data.cfd] == expected
    assert all(set(counts) == set(p.TASK_STATES) for _, counts in data.cfd)


def test_throughput_lead_and_cycle_times(history):
    data = insights(project=history.project, period=period())
    assert data.throughput == [(date(2026, 1, 5), 0), (date(2026, 1, 6), 1), (date(2026, 1, 7), 1)]
    # A: created Jan 5 10:00, first claimed 12:00, merged Jan 6 13:00 (27 h, 25 h);
    # B: created Jan 6 08:00, claimed 09:30, merged Jan 7 10:00 (26 h, 24.5 h).
    assert data.lead_time.n == 2
    assert (data.lead_time.p50, data.lead_time.p90, data.lead_time.max) == (95400, 96840, 97200)
    assert (data.cycle_time.p50, data.cycle_time.p90, data.cycle_time.max) == (
        89100,
        89820,
        90000,
    )
    assert data.rounds_to_approval == {1: 1, 2: 1}


def test_time_in_each_state_with_the_slowest_stays(history):
    data = insights(project=history.project, period=period())
    by_state = {t.state: t for t in data.time_in_state}
    assert list(by_state) == list(p.NON_TERMINAL_TASK_STATES)
    expected = {
        # state: (stays, p50, p90, max), seconds
        "DRAFT": (4, 2700, 212760, 302400),  # A 1 h, B 30 min, C 10 min, D 3.5 d ongoing
        "UNCLAIMED": (3, 3600, 3600, 3600),  # A 1 h, B 1 h, C 10 min
        "CLAIMED": (4, 8400, 16740, 19800),  # A 2 h and 1 h, B 5.5 h, C 2 h 40
        "READY_FOR_REVIEW": (3, 7200, 7200, 7200),  # A 2 h twice, B 1 h
        "REJECTED": (1, 61200, 61200, 61200),  # A 17 h
        "APPROVED": (2, 34200, 58680, 64800),  # A 1 h, B 18 h
        "BLOCKED": (1, 43200, 43200, 43200),  # C 12 h, ongoing
        "INTEGRATION_FAILED": (0, None, None, None),
    }
    got = {
        state: (t.spread.n, t.spread.p50, t.spread.p90, t.spread.max)
        for state, t in by_state.items()
    }
    assert got == expected
    slowest = by_state["DRAFT"].slowest
    assert [(s.key, s.seconds, s.ongoing) for s in slowest] == [
        ("D", 302400, True),
        ("A", 3600, False),
        ("B", 1800, False),
        ("C", 600, False),
    ]


def test_per_agent_figures(history):
    data = insights(project=history.project, period=period())
    figures = {a.agent_id: a for a in data.agents}
    coder1, coder2, coder3 = figures["coder-1"], figures["coder-2"], figures["coder-3"]
    assert (coder1.claims, coder1.approvals_received, coder1.rejections_received) == (2, 1, 1)
    assert (coder1.approval_rate, coder1.rejection_rate) == (50, 50)
    assert coder1.rounds_to_approval == [2]
    assert (coder2.claims, coder2.approval_rate, coder2.rounds_to_approval) == (1, 100, [1])
    assert (coder3.claims, coder3.blocks, coder3.approval_rate) == (1, 1, None)
    reviewer = figures["code-reviewer-1"]
    assert (reviewer.approvals_given, reviewer.rejections_given) == (2, 1)
    assert round(reviewer.given_approval_rate, 1) == 66.7
    assert reviewer.rubber_stamp is False
    assert figures["code-reviewer-2"].verdicts_given == 0
    # Every registered agent is listed, each with its role.
    assert {a.role for a in data.agents} == {"planner", "coder", "code_reviewer"}
    # The agent page asks for one agent and gets the same figures.
    [alone] = agent_figures(project=history.project, period=period(), agent_id="coder-1")
    assert alone == coder1


def test_a_period_counts_only_its_own_events(history):
    # Jan 7 alone: B merged (lead 26 h), C claimed and blocked; A's history is before it.
    data = insights(
        project=history.project,
        period=insights_period(now=moment(9, 0), start=date(2026, 1, 7), end=date(2026, 1, 7)),
    )
    assert data.throughput == [(date(2026, 1, 7), 1)]
    assert (data.lead_time.n, data.lead_time.p50) == (1, 93600)
    assert data.rounds_to_approval == {}
    figures = {a.agent_id: a for a in data.agents}
    assert (figures["coder-1"].claims, figures["coder-3"].claims) == (0, 1)
    assert figures["code-reviewer-1"].verdicts_given == 0


def test_a_sprint_scopes_the_figures_to_its_tasks(history):
    world = history
    sprint = sprint_create(
        project=world.project, actor=world.planner, planned=["B"], now=moment(8, 0)
    )
    # The sprint's own run by default (started Jan 8 00:00: nothing happened since), or the days
    # asked for, over its tasks only.
    assert insights_period(now=moment(9, 0), sprint=sprint) == Period(
        moment(8, 0), moment(9, 0), sprint
    )
    data = insights(
        project=world.project,
        period=insights_period(
            now=moment(9, 0), sprint=sprint, start=date(2026, 1, 5), end=date(2026, 1, 7)
        ),
    )
    assert data.tasks == 1
    assert data.throughput == [(date(2026, 1, 5), 0), (date(2026, 1, 6), 0), (date(2026, 1, 7), 1)]
    assert data.rounds_to_approval == {1: 1}
    assert [(at_, counts["MERGED"], counts["DRAFT"]) for at_, counts in data.cfd][-1] == (
        moment(8, 0),
        1,
        0,
    )
    figures = {a.agent_id: a for a in data.agents}
    assert (figures["coder-1"].claims, figures["coder-2"].claims) == (0, 1)


def test_rubber_stamps_lease_expiries_and_alerts(db):
    world = World(now=moment(5, 9))
    goal_create(project=world.project, actor=world.planner, description="Stamps", now=world.now)
    for i in range(5):
        world.approved(f"S-{i}")
    start = insights_period(now=world.now + timedelta(days=1), start=date(2026, 1, 5))
    figures = {a.agent_id: a for a in agent_figures(project=world.project, period=start)}
    assert figures["code-reviewer-1"].approvals_given == 5
    assert figures["code-reviewer-1"].rubber_stamp is True  # 100 % of 5 verdicts
    assert figures["coder-1"].rubber_stamp is False

    task = world.claimed("L-1", coder="coder-2")
    dead = task.lease_expires + timedelta(seconds=config_of(world.project).lease_grace + 1)
    watch_sweep(project=world.project, now=dead)
    period_ = insights_period(now=dead + timedelta(hours=1), start=date(2026, 1, 5))
    data = insights(project=world.project, period=period_)
    figures = {a.agent_id: a for a in data.agents}
    assert figures["coder-2"].lease_expiries == 1
    assert figures["coder-1"].lease_expiries == 0
    alerts = Alert.objects.filter(project=world.project)
    assert alerts.exists()
    per_day = {d: levels for d, levels in data.alerts if any(levels.values())}
    day = dead.astimezone(UTC).date()
    assert list(per_day) == [day]
    assert per_day[day] == {
        level: alerts.filter(level=level).count() for level in Alert.Level.values
    }


@pytest.mark.parametrize(
    ("approvals", "verdicts", "flagged"),
    [(5, 5, True), (4, 4, False), (19, 20, False), (20, 21, True), (381, 400, True), (0, 0, False)],
)
def test_the_rubber_stamp_rule(approvals, verdicts, flagged):
    assert p.rubber_stamp(approvals, verdicts) is flagged
