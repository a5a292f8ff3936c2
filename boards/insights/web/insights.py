"""Insights and agent pages (issue #13): flow and quality figures, every chart with its table
and its CSV (`?format=csv&chart=<name>`). The figures come from
`boards.insights.selectors.insights`;
this module only lays them out (tables, SVG from `boards.insights.web.charts`)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from agents.selectors import run_list, with_cost
from boards import protocol as p
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.web.access import project_for_member
from boards.insights.selectors.figures import insights_period
from boards.insights.selectors.insights import (
    Insights,
    Period,
    agent_events,
    agent_figures,
    agent_get,
    insights,
)
from boards.insights.web import charts

# The CFD's layers bottom-up: finished work at the bottom, the queue on top (the usual reading).
CFD_ORDER: tuple[str, ...] = (
    p.TaskStatus.MERGED,
    p.TaskStatus.SUPERSEDED,
    p.TaskStatus.ABANDONED,
    p.TaskStatus.APPROVED,
    p.TaskStatus.READY_FOR_REVIEW,
    p.TaskStatus.REJECTED,
    p.TaskStatus.INTEGRATION_FAILED,
    p.TaskStatus.CLAIMED,
    p.TaskStatus.BLOCKED,
    p.TaskStatus.UNCLAIMED,
    p.TaskStatus.DRAFT,
)

# Column kinds: how the page shows a cell (the CSV writes the raw value; durations in seconds).
TEXT, COUNT, DURATION, PERCENT, DECIMAL = "text", "count", "duration", "percent", "decimal"
USD = "usd"  # issue 24: a cost, shown "$1.15" (the table and the CSV keep the number)


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: list[tuple[str, str]]  # (heading, kind)
    rows: list[list[Any]]


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _seconds(value: float | None) -> float | None:
    """Durations to a tenth of a second (percentiles may fall between two whole seconds)."""
    return None if value is None else round(value, 1)


def agents_table(agents) -> Table:
    """The per-agent figures (insights and the agent page show the same table)."""
    return Table(
        "agents",
        "Per agent",
        [
            ("agent", TEXT),
            ("role", TEXT),
            ("claims", COUNT),
            ("verdicts received", COUNT),
            ("approval rate %", PERCENT),
            ("rejection rate %", PERCENT),
            ("mean rounds to approval", DECIMAL),
            ("lease expiries", COUNT),
            ("blocks", COUNT),
            ("verdicts given", COUNT),
            ("approvals given %", PERCENT),
            ("rubber stamp", TEXT),
        ],
        [
            [
                a.agent_id,
                a.role,
                a.claims,
                a.verdicts_received,
                _rate(a.approval_rate),
                _rate(a.rejection_rate),
                _rate(a.mean_rounds_to_approval),
                a.lease_expiries,
                a.blocks,
                a.verdicts_given,
                _rate(a.given_approval_rate),
                "yes" if a.rubber_stamp else "no",
            ]
            for a in agents
        ],
    )


def state_tables(data: Insights) -> dict[str, Table]:
    """The flow through the states: cumulative flow, time in each state, the slowest stays."""
    cfd_states = list(CFD_ORDER)
    return {
        "cfd": Table(
            "cfd",
            "Cumulative flow (tasks per state at the end of each day)",
            [("moment", TEXT)] + [(state, COUNT) for state in cfd_states],
            [
                [p.format_timestamp(moment)] + [counts[state] for state in cfd_states]
                for moment, counts in data.cfd
            ],
        ),
        "time_in_state": Table(
            "time_in_state",
            "Time in each state",
            [
                ("state", TEXT),
                ("stays", COUNT),
                ("p50", DURATION),
                ("p90", DURATION),
                ("max", DURATION),
            ],
            [
                [t.state, t.spread.n, *map(_seconds, (t.spread.p50, t.spread.p90, t.spread.max))]
                for t in data.time_in_state
            ],
        ),
        "slowest": Table(
            "slowest",
            "Slowest stays per state",
            [
                ("state", TEXT),
                ("task", TEXT),
                ("entered", TEXT),
                ("time", DURATION),
                ("ongoing", TEXT),
            ],
            [
                [
                    s.state,
                    s.key,
                    p.format_timestamp(s.entered),
                    _seconds(s.seconds),
                    "yes" if s.ongoing else "no",
                ]
                for t in data.time_in_state
                for s in t.slowest
            ],
        ),
    }


def tables(data: Insights) -> dict[str, Table]:
    """Every chart's numbers, as the page's tables and the CSVs show them (one source)."""
    return {
        **state_tables(data),
        "throughput": Table(
            "throughput",
            "Throughput (tasks merged per day)",
            [("day", TEXT), ("merged", COUNT)],
            [[day.isoformat(), n] for day, n in data.throughput],
        ),
        "lead_cycle": Table(
            "lead_cycle",
            "Lead time (created → merged) and cycle time (first claim → merged)",
            [
                ("measure", TEXT),
                ("tasks", COUNT),
                ("p50", DURATION),
                ("p90", DURATION),
                ("max", DURATION),
            ],
            [
                [name, spread.n, *map(_seconds, (spread.p50, spread.p90, spread.max))]
                for name, spread in (("lead time", data.lead_time), ("cycle time", data.cycle_time))
            ],
        ),
        "review_rounds": Table(
            "review_rounds",
            "Review rounds to approval (1 = approved at the first review)",
            [("rounds", COUNT), ("approvals", COUNT)],
            [[rounds, n] for rounds, n in data.rounds_to_approval.items()],
        ),
        "agents": agents_table(data.agents),
        **cost_tables(data),
        "alerts": Table(
            "alerts",
            "Alerts first seen per day, by level",
            [("day", TEXT)] + [(level, COUNT) for level in ("info", "warning", "critical")],
            [
                [day.isoformat(), levels["info"], levels["warning"], levels["critical"]]
                for day, levels in data.alerts
            ],
        ),
    }


def _usd(value) -> float:
    return round(float(value), 6)


def cost_tables(data: Insights) -> dict[str, Table]:
    """Issue 24: what the runs cost (USD as the CLIs reported it, and tokens)."""
    cost = data.cost
    columns = [("usd", USD), ("tokens", COUNT)]
    return {
        "cost_per_day": Table(
            "cost_per_day",
            f"Cost per day (total ${cost.total.usd:.2f}, {cost.total.tokens:,} tokens)",
            [("day", TEXT), *columns],
            [[day.isoformat(), _usd(c.usd), c.tokens] for day, c in cost.per_day],
        ),
        "cost_per_agent": Table(
            "cost_per_agent",
            "Cost per agent",
            [("agent", TEXT), *columns],
            [[agent, _usd(c.usd), c.tokens] for agent, c in cost.per_agent],
        ),
        "cost_per_task": Table(
            "cost_per_task",
            "Cost per task (runs of no task: “–”)",
            [("task", TEXT), *columns],
            [[key or "–", _usd(c.usd), c.tokens] for key, c in cost.per_task],
        ),
        "cost_per_merged_task": Table(
            "cost_per_merged_task",
            "Cost per task merged in the period (all its runs)",
            [("task", TEXT), *columns],
            [[key, _usd(c.usd), c.tokens] for key, c in cost.per_merged_task],
        ),
    }


def svgs(data: Insights, t: dict[str, Table]) -> dict[str, Any]:
    """The charts, drawn from the tables (so a chart can only show what its table says)."""
    cfd = t["cfd"]
    drawn = [
        (i, heading)
        for i, (heading, kind) in enumerate(cfd.columns)
        if kind == COUNT and any(row[i] for row in cfd.rows)
    ]
    day_labels = [day.isoformat()[5:] for day in data.period.days]
    states = t["time_in_state"].rows
    lead = t["lead_cycle"].rows
    rounds = [str(row[0]) for row in t["review_rounds"].rows]  # the labels: rounds needed
    alerts = t["alerts"].rows
    return {
        "cfd": charts.stacked_area(
            "cfd",
            "Cumulative flow diagram",
            day_labels,
            [charts.Series(heading, [row[i] for row in cfd.rows]) for i, heading in drawn],
        ),
        "time_in_state": _p50_p90("time_in_state", "Time in each state, p50 and p90", states),
        "throughput": _per_label(
            t, "throughput", "Tasks merged per day", day_labels, "merged", "tasks"
        ),
        "lead_cycle": _p50_p90("lead_cycle", "Lead and cycle time, p50 and p90", lead),
        "review_rounds": _per_label(
            t, "review_rounds", "Approvals by review rounds needed", rounds, "approvals", "tasks"
        ),
        "cost_per_day": _per_label(
            t, "cost_per_day", "Cost per day (USD)", day_labels, "usd", "USD"
        ),
        "alerts": charts.bars(
            "alerts",
            "Alerts first seen per day",
            day_labels,
            [
                charts.Series(level, [row[k + 1] for row in alerts], css=f"level-{level}")
                for k, level in enumerate(("info", "warning", "critical"))
            ],
            stacked=True,
            unit="alerts",
        ),
    }


def human_duration(seconds: float) -> str:
    """3d 04h, 2h 05m, 4m 10s, 12s: the page's reading of a duration (tables keep seconds)."""
    return p.two_units(round(seconds), ((86_400, "d"), (3_600, "h"), (60, "m"), (1, "s")))


def shown(table: Table) -> list[list[dict[str, Any]]]:
    """The table's cells as the page shows them: text, and the raw value (`data-value`)."""
    rows = []
    for row in table.rows:
        cells = []
        for (_, kind), value in zip(table.columns, row, strict=True):
            if value is None:
                text = "–"
            elif kind == DURATION:
                text = human_duration(value)
            elif kind == PERCENT:
                text = f"{value:g} %"
            elif kind == USD:
                text = f"${value:,.2f}"
            else:
                text = str(value)
            raw = "" if value is None else (round(value, 3) if isinstance(value, float) else value)
            cells.append({"text": text, "value": raw, "numeric": kind != TEXT})
        rows.append(cells)
    return rows


def csv_response(table: Table, filename: str) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow([heading for heading, _ in table.columns])
    for row in table.rows:
        writer.writerow(["" if cell is None else cell for cell in row])
    return response


def _day(raw: str, name: str, errors: list[str]) -> date | None:
    if not raw.strip():
        return None
    try:
        day = date.fromisoformat(raw.strip())
    except ValueError:
        day = None
    # From 1970 on: a period reaching back before year 1 would overflow its date arithmetic.
    if day is None or day.year < 1970:
        errors.append(f"{name}: give a day as YYYY-MM-DD, from 1970 on")
        return None
    return day


def _period(request: HttpRequest, project: Project, errors: list[str]) -> Period:
    now = timezone.now()
    sprint_id = request.GET.get("sprint", "").strip()
    sprint = None
    if sprint_id:
        # A NUL byte cannot reach PostgreSQL (it would answer 500): no sprint has one.
        sprint = (
            Sprint.objects.filter(project=project, sprint_id=sprint_id).first()
            if "\x00" not in sprint_id
            else None
        )
        if sprint is None:
            errors.append(f"sprint: no sprint {sprint_id[:64]!r} in this project")
    start = _day(request.GET.get("from", ""), "from", errors)
    end = _day(request.GET.get("to", ""), "to", errors)
    if start and end and start > end:
        errors.append("from: must not be after to")
        start = end = None
    return insights_period(now=now, sprint=sprint, start=start, end=end)


@login_required
def insights_page(request: HttpRequest, slug: str) -> HttpResponse:
    """`/p/<slug>/insights/` for any member: the project's or a sprint's flow and quality."""
    project, role = project_for_member(request, slug)
    errors: list[str] = []
    period = _period(request, project, errors)
    data = insights(project=project, period=period)
    t = tables(data)
    if request.GET.get("format") == "csv":
        chart = request.GET.get("chart", "")
        if chart not in t or errors:
            problem = "; ".join(errors) or f"chart: one of {', '.join(t)}"
            return HttpResponse(problem, status=400, content_type="text/plain; charset=utf-8")
        name = f"{project.slug}-{chart}-{period.start:%Y%m%d}-{period.end:%Y%m%d}.csv"
        return csv_response(t[chart], name)
    drawn = svgs(data, t)
    period_query = urlencode(
        {k: request.GET[k] for k in ("sprint", "from", "to") if request.GET.get(k, "").strip()}
    )
    context = {
        "project": project,
        "role": role,
        "period": period,
        "insights": data,
        "tables": [
            {"table": table, "rows": shown(table), "svg": drawn.get(name)}
            for name, table in t.items()
        ],
        "sprints": list(Sprint.objects.filter(project=project).order_by("-started", "-id")),
        "errors": errors,
        # The period's query, which each table's CSV link repeats.
        "csv_prefix": "?" + "".join(f"{pair}&" for pair in period_query.split("&") if pair),
        "from_value": request.GET.get("from", ""),
        "to_value": request.GET.get("to", ""),
    }
    return render(request, "boards/insights.html", context, status=400 if errors else 200)


def _p50_p90(chart_id: str, title: str, rows):
    """The p50 and p90 bars of a percentile table (name, count, p50, p90, …; none drawn as 0),
    a group per row."""
    series = [
        charts.Series("p50", [row[2] or 0 for row in rows]),
        charts.Series("p90", [row[3] or 0 for row in rows]),
    ]
    return charts.bars(chart_id, title, [row[0] for row in rows], series, durations=True)


def _per_label(t, chart_id: str, title: str, labels: list[str], name: str, unit: str):
    """One bar per label: the second column of the chart's table (`t[chart_id]`)."""
    values = [row[1] for row in t[chart_id].rows]
    return charts.bars(chart_id, title, labels, [charts.Series(name, values)], unit=unit)


AGENT_PAGE_RUNS = 20  # the agent page lists its latest runs, as the drawer does


@login_required
def agent_page(request: HttpRequest, slug: str, agent_id: str) -> HttpResponse:
    """`/p/<slug>/agents/<agent_id>/`: its task and lease, its history, its quality figures
    (the insights' per-agent figures, over the project's whole life)."""
    project, role = project_for_member(request, slug)
    agent = agent_get(project=project, agent_id=agent_id)
    if agent is None:
        raise Http404("No such agent.")
    now = timezone.now()
    period = Period(min(project.created, now), now)
    figures = agent_figures(project=project, period=period, agent_id=agent.agent_id)
    return render(
        request,
        "boards/agent.html",
        {
            "project": project,
            "role": role,
            "agent": agent,
            "now": now,
            "figures": figures[0] if figures else None,
            "table": agents_table(figures),
            "rows": shown(agents_table(figures)),
            "events": agent_events(project=project, agent_id=agent.agent_id),
            "runs": list(
                with_cost(run_list(project=project, agent_id=agent.agent_id))[:AGENT_PAGE_RUNS]
            ),
        },
    )
