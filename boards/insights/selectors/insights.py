"""Insights (issue #13): flow and quality figures of a project or a sprint, from the event table.

Everything here reads the append-only `Event` log (and `Alert` for the alerts chart); nothing is
kept in aggregate tables, so a figure can always be recomputed for any period. Definitions (the
ones docs/decisions.md "Insights" gives, and the tests compute by hand):

- A task's *state history* is its applied events that name a `to_status`, in time order; a task
  is in a state from the event that entered it until the next one. Refused attempts (`outcome`
  rejected) name the state they tried and are left out.
- The *cumulative flow diagram* counts, at the end of each UTC day of the period (the last point
  at the period's end), the tasks in each state.
- *Time in a state*: each stay in a non-terminal state that ended within the period, or still
  runs at its end (counted up to the end, marked ongoing); p50/p90 and the slowest stays.
- *Throughput*: transitions to MERGED per UTC day. *Lead time* = created → MERGED, *cycle time*
  = first CLAIMED → MERGED, for the tasks merged within the period.
- *Review rounds to approval*: at each transition to APPROVED in the period, the rejections the
  task had had (`review_cycles_total` in the event's board snapshot) plus one, the approving
  round.
- *Per agent*, within the period: claims (claimed or took over), blocks it raised, lease expiries
  (the watcher's `lease_expired`, naming the agent), verdicts received on its work (reviewers'
  `approved`/`rejected` while the task was assigned to it) and the review rounds its approved
  tasks needed; for reviewers, verdicts given and the rubber-stamp flag (`p.rubber_stamp`, the
  rule the sprint metrics use).

- *Cost* (issue 24), from the usage rows (`agents.models.RunUsage`) first reported within the
  period: USD and tokens per UTC day, per agent and per task; and per task merged within the
  period, everything its runs ever cost (what a merged change cost in all).

Percentiles interpolate linearly between the closest ranks (PostgreSQL's `percentile_cont`).
Nine queries whatever the size: the tasks (a count), their stays (one statement that returns
the figures' few hundred rows), the per-agent counts, the alerts per day, the agents' roles,
and the cost per day, per agent, per task and per merged task.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from django.db import connection
from django.db.models import Case, CharField, Count, F, Q, When
from django.db.models.fields.json import KT
from django.db.models.functions import TruncDate

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Task
from boards.insights.selectors.costs import cost_figures
from boards.insights.selectors.figures import (
    CLAIMS,
    SLOWEST,
    VERDICTS,
    AgentFigures,
    CostFigures,
    Epoch,
    Period,
    Spread,
    StateTimes,
    Stay,
    epoch_moment,
    spread_of,
)
from boards.protocol import Action, TaskStatus


@dataclass(frozen=True)
class Insights:
    period: Period
    tasks: int
    states: tuple[str, ...]
    cfd: list[tuple[datetime, dict[str, int]]]
    time_in_state: list[StateTimes]
    throughput: list[tuple[date, int]]
    lead_time: Spread
    cycle_time: Spread
    rounds_to_approval: dict[int, int]  # rounds → approvals that needed them
    agents: list[AgentFigures]
    alerts: list[tuple[date, dict[str, int]]]
    cost: CostFigures = field(default_factory=lambda: CostFigures())


def _task_ids(period: Period):
    """The sprint's planned and stretch tasks (a subquery), or None for the whole project."""
    if period.sprint is None:
        return None
    sprint = period.sprint
    return Task.objects.filter(Q(planned_in=sprint) | Q(stretch_in=sprint)).values("id")


@dataclass
class _Flow:
    """The per-stay figures, before assembly: CFD deltas per sample index, time in state,
    merges per day index, lead and cycle times, review rounds (overall and per coder)."""

    steps: dict[str, list[int]]
    time_in_state: list[StateTimes]
    merged_on: Counter[int] = field(default_factory=Counter)
    lead: list[float] = field(default_factory=list)
    cycle: list[float] = field(default_factory=list)
    rounds: Counter[int] = field(default_factory=Counter)
    rounds_of: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))


def _task_rows(project: Project, period: Period):
    task_rows = Task.objects.filter(project=project)
    ids = _task_ids(period)
    if ids is not None:
        task_rows = task_rows.filter(id__in=ids)
    return task_rows


def insights(*, project: Project, period: Period) -> Insights:
    """Every figure of the insights page for `period` (see the module's definitions).

    The per-stay work runs in one SQL statement (`_flow_sql`: window functions over each
    task's transitions) and Python reads a few hundred rows. The tests hold it equal to a plain
    reference walk of the state history (tests/insights/selectors/insights_oracle.py).
    """
    tasks = _task_rows(project, period).count()
    flow = _flow_sql(project, period)
    samples = period.samples()
    cfd = []
    running = dict.fromkeys(flow.steps, 0)
    for i, moment in enumerate(samples):
        for state in flow.steps:
            running[state] += flow.steps[state][i]
        cfd.append((moment, {state: running[state] for state in p.TASK_STATES}))
    return Insights(
        period=period,
        tasks=tasks,
        states=p.TASK_STATES,
        cfd=cfd,
        time_in_state=flow.time_in_state,
        throughput=[(day, flow.merged_on.get(i, 0)) for i, day in enumerate(period.days)],
        lead_time=Spread.of(flow.lead),
        cycle_time=Spread.of(flow.cycle),
        rounds_to_approval=dict(sorted(flow.rounds.items())),
        agents=agent_figures(project=project, period=period, rounds_of=flow.rounds_of),
        alerts=_alerts_per_day(project, period),
        cost=cost_figures(project=project, period=period),
    )


FLOW_SQL = """
WITH samples AS (SELECT %s::float8 AS first, %s::float8 AS last, %s::int AS n),
stays AS (
    SELECT task_id, state, entered, left_at, {before_entered} AS lo,
           CASE WHEN left_at IS NULL THEN n ELSE {before_left} END AS hi
    FROM (
        SELECT task_id, state, entered,
               LEAD(entered) OVER (PARTITION BY task_id ORDER BY ts, id) AS left_at
        FROM (
            SELECT task_id, id, ts, to_status AS state, at AS entered,
                   LAG(to_status) OVER (PARTITION BY task_id ORDER BY ts, id) AS prev
            FROM ({history}) h
        ) marked WHERE prev IS DISTINCT FROM state
    ) s, samples
),
durations AS MATERIALIZED (
    -- `code`: the state's position in the list, so that grouping sorts integers, not text.
    SELECT task_id, state, array_position(%s::text[], state::text) AS code,
           COALESCE(left_at, %s) - entered AS seconds, entered, left_at IS NULL AS ongoing
    FROM stays WHERE state = ANY(%s) AND (left_at IS NULL OR left_at >= %s)
),
counts AS (SELECT code, count(*) AS n FROM durations GROUP BY code),
ranks AS (
    -- The k-th value (from 0) is percentile_disc's at (k + 1/2) / n: the middle of its step.
    -- n comes from `counts` per group (a join would carry it on every duration).
    SELECT code, min(state) AS state, (SELECT n FROM counts c WHERE c.code = d.code) AS n,
           percentile_disc((
               SELECT ARRAY[
                   ((n - 1) * 50 / 100 + 0.5) / n,
                   (LEAST((n - 1) * 50 / 100 + 1, n - 1) + 0.5) / n,
                   ((n - 1) * 90 / 100 + 0.5) / n,
                   (LEAST((n - 1) * 90 / 100 + 1, n - 1) + 0.5) / n,
                   (n - 0.5) / n,
                   (GREATEST(n - %s, 0) + 0.5) / n
               ]::float8[] FROM counts c WHERE c.code = d.code
           )) WITHIN GROUP (ORDER BY d.seconds) AS v
    FROM durations d GROUP BY code
),
first_claims AS (
    SELECT task_id, min(entered) AS at FROM stays WHERE state = %s GROUP BY task_id
)
SELECT 'cfd' AS part, state, lo, hi, count(*), NULL::float8, NULL::float8, NULL::text,
       NULL::bool, NULL::bigint, NULL::float8, NULL::float8[]
FROM stays WHERE lo < hi GROUP BY state, lo, hi
UNION ALL
SELECT 'rank', state, NULL, NULL, n, NULL, NULL, NULL, NULL, NULL, NULL, v FROM ranks
UNION ALL
SELECT 'stay', d.state, NULL, NULL, NULL, d.seconds, d.entered, COALESCE(t.key, '?'),
       d.ongoing, NULL, NULL, NULL
FROM durations d JOIN ranks r ON r.code = d.code AND d.seconds >= r.v[6]
LEFT JOIN {task} t ON t.id = d.task_id
UNION ALL
SELECT 'event', e.to_status, (e.ts AT TIME ZONE 'UTC')::date - %s::date, e.rejections::int,
       NULL, e.at - date_part('epoch', t.created), e.at - c.at, e.assignee, NULL, e.task_id,
       e.at, NULL
FROM ({events}) e
LEFT JOIN {task} t ON t.id = e.task_id
-- The first claim: the task's first, as the Python path takes it (nothing follows MERGED).
LEFT JOIN first_claims c ON c.task_id = e.task_id AND e.to_status = %s
WHERE e.to_status = %s OR e.rejections IS NOT NULL
ORDER BY 1, 10, 11
"""


# How many of the CFD's samples come before the moment {x} (bisect_left, in SQL). The samples
# are whole UTC days apart, from `first` (the end of the first day), but the last, which is the
# period's end: the samples before it number ceil((x - first) / 86400), within 0..n-1, plus one
# if x is past the end. Exact where it counts (x within a factor of two of `first`): x - first
# is then exact, and a quotient that is not whole stays clear of the whole number below it (by
# at least x's float spacing over 86400, ~3e-12) by far more than its rounding near 366 days
# (~1e-13). No array is searched per row, as `width_bucket` over the samples did.
_SAMPLES_BEFORE = (
    "(LEAST(GREATEST(ceil(({x} - first) / 86400), 0), n - 1)::int + ({x} > last)::int)"
)


def _applied_events(project: Project, period: Period):
    """The applied events up to the period's end, of its sprint's tasks when it has one: what
    every figure here reads (each adds its own start, if any, and kinds)."""
    events = Event.objects.filter(
        project=project, outcome=Event.Outcome.APPLIED, timestamp__lte=period.end
    )
    ids = _task_ids(period)
    return events if ids is None else events.filter(task__in=ids)


def _history_query(project: Project, period: Period):
    """The state history as a queryset (the filters `_state_history` and `_flow_sql` share)."""
    return _applied_events(project, period).filter(task__isnull=False).exclude(to_status="")


def _flow_sql(project: Project, period: Period) -> _Flow:
    start, end = period.start.timestamp(), period.end.timestamp()
    # Only the columns of the covering index: an index-only scan, in the windows' order.
    history = (
        _history_query(project, period)
        .order_by()
        .annotate(at=Epoch("timestamp"), ts=F("timestamp"))
        .values("task_id", "id", "to_status", "at", "ts")
    )
    at_approval = Q(to_status=TaskStatus.APPROVED)
    events = (
        _history_query(project, period)
        .filter(timestamp__gte=period.start, to_status__in=[TaskStatus.MERGED, TaskStatus.APPROVED])
        .order_by()
        .annotate(
            at=Epoch("timestamp"),
            ts=F("timestamp"),
            assignee=Case(
                When(at_approval, then=KT("board__assigned_to")), output_field=CharField()
            ),
            rejections=Case(
                When(at_approval, then=KT("board__review_cycles_total")),
                output_field=CharField(),
            ),
        )
        .values("task_id", "to_status", "at", "ts", "assignee", "rejections")
    )
    history_sql, history_params = history.query.sql_with_params()
    events_sql, events_params = events.query.sql_with_params()
    samples = [moment.timestamp() for moment in period.samples()]
    states = list(p.NON_TERMINAL_TASK_STATES)
    params = [
        samples[0],
        samples[-1],
        len(samples),
        *history_params,
        states,
        end,
        states,
        start,
        SLOWEST,
        TaskStatus.CLAIMED.value,
        period.days[0],
        *events_params,
        TaskStatus.MERGED.value,
        TaskStatus.MERGED.value,
    ]
    task_table = connection.ops.quote_name(Task._meta.db_table)
    sql = FLOW_SQL.format(
        history=history_sql,
        events=events_sql,
        task=task_table,
        before_entered=_SAMPLES_BEFORE.format(x="entered"),
        before_left=_SAMPLES_BEFORE.format(x="left_at"),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return _read_flow(fetched, len(samples))


def _read_flow(fetched: list[tuple], samples: int) -> _Flow:
    """`FLOW_SQL`'s rows (CFD steps over `samples` samples, rank values, the slowest stays,
    merges and approvals) as the flow's figures."""
    steps = {state: [0] * (samples + 1) for state in p.TASK_STATES}
    flow = _Flow(steps, [])
    spreads: dict[str, Spread] = {}
    slowest: dict[str, list[tuple[float, str, float, bool]]] = defaultdict(list)
    for part, state, a, b, n, x, y, text, flag, _task, _at, values in fetched:
        if part == "cfd":
            counts_of = steps.setdefault(state, [0] * (samples + 1))
            counts_of[a] += n
            counts_of[b] -= n
        elif part == "rank":
            spreads[state] = spread_of(n, values)
        elif part == "stay":
            slowest[state].append((-x, text, y, flag))
        elif state == TaskStatus.MERGED:
            flow.merged_on[a] += 1
            if x is not None:
                flow.lead.append(x)
            if y is not None:
                flow.cycle.append(y)
        else:  # an approval: b holds the rejections before it
            flow.rounds[b + 1] += 1
            flow.rounds_of[text or ""].append(b + 1)
    for state in p.NON_TERMINAL_TASK_STATES:
        stays = [
            Stay(key, state, epoch_moment(at), -negated, ongoing)
            for negated, key, at, ongoing in heapq.nsmallest(SLOWEST, slowest[state])
        ]
        spread = spreads.get(state, Spread(0, None, None, None))
        flow.time_in_state.append(StateTimes(state, spread, stays))
    return flow


def agent_figures(
    *,
    project: Project,
    period: Period,
    rounds_of: dict[str, list[int]] | None = None,
    agent_id: str | None = None,
) -> list[AgentFigures]:
    """Per agent (every registered agent, and any other the events name), within `period`.

    One grouped query counts claims, blocks, verdicts given and received and lease expiries;
    `rounds_of` (the review rounds each coder's approved tasks needed) comes from `insights`'s
    state history, or is read here when called alone (the agent page).
    """
    agents: dict[str, AgentFigures] = {}

    def of(name: str) -> AgentFigures:
        if name not in agents:
            agents[name] = AgentFigures(name)
        return agents[name]

    roles = Agent.objects.filter(project=project)
    if agent_id is not None:
        roles = roles.filter(agent_id=agent_id)
    for name, role in roles.values_list("agent_id", "role"):
        of(name).role = role
    events = _applied_events(project, period).filter(
        timestamp__gte=period.start,
        action__in=[*CLAIMS, *VERDICTS, Action.BLOCKED, Action.LEASE_EXPIRED],
    )
    if agent_id is not None:
        events = events.filter(
            Q(actor_id=agent_id) | Q(board__assigned_to=agent_id) | Q(data__agent=agent_id)
        )
    counted = (
        events.values_list("action", "actor_id", KT("board__assigned_to"), KT("data__agent"))
        .annotate(n=Count("id"))
        .order_by()
    )
    for action, actor, assignee, expired, n in counted:
        if action in CLAIMS:
            of(actor).claims += n
        elif action == Action.BLOCKED:
            of(actor).blocks += n
        elif action == Action.LEASE_EXPIRED and expired:
            of(expired).lease_expiries += n
        elif action in VERDICTS:
            given = of(actor)
            if action == Action.APPROVED:
                given.approvals_given += n
            else:
                given.rejections_given += n
            if assignee:
                received = of(assignee)
                if action == Action.APPROVED:
                    received.approvals_received += n
                else:
                    received.rejections_received += n
    if rounds_of is None:
        rounds_of = _rounds_of(project, period, agent_id)
    for name, rounds in rounds_of.items():
        if name:
            of(name).rounds_to_approval.extend(rounds)
    if agent_id is not None:
        return [figures for name, figures in agents.items() if name == agent_id]
    return sorted(agents.values(), key=lambda a: (a.role or "~", a.agent_id))


def _rounds_of(project: Project, period: Period, agent_id: str | None) -> dict[str, list[int]]:
    events = _applied_events(project, period).filter(
        to_status=TaskStatus.APPROVED, timestamp__gte=period.start, board__isnull=False
    )
    if agent_id is not None:
        events = events.filter(board__assigned_to=agent_id)
    rounds: dict[str, list[int]] = defaultdict(list)
    for assignee, rejections in events.values_list(
        KT("board__assigned_to"), KT("board__review_cycles_total")
    ):
        if rejections is not None:
            rounds[assignee or ""].append(int(rejections) + 1)
    return rounds


def _alerts_per_day(project: Project, period: Period) -> list[tuple[date, dict[str, int]]]:
    """Alerts first seen each UTC day, by level (the sprint's: on its tasks or on none)."""
    alerts = Alert.objects.filter(
        project=project, created__gte=period.start, created__lte=period.end
    )
    ids = _task_ids(period)
    if ids is not None:
        alerts = alerts.filter(Q(task__in=ids) | Q(task__isnull=True))
    per_day: dict[date, dict[str, int]] = {
        day: dict.fromkeys(Alert.Level.values, 0) for day in period.days
    }
    for day, level, n in (
        alerts.annotate(day=TruncDate("created", tzinfo=UTC))
        .values_list("day", "level")
        .annotate(n=Count("id"))
        .order_by()
    ):
        if day in per_day:
            per_day[day][level] = n
    return list(per_day.items())


def agent_get(*, project: Project, agent_id: str) -> Agent | None:
    if "\x00" in agent_id:
        return None  # PostgreSQL refuses NUL in text (a 500); no agent id holds one
    return (
        Agent.objects.filter(project=project, agent_id=agent_id)
        .select_related("current_task")
        .first()
    )


def agent_events(*, project: Project, agent_id: str, limit: int = 100) -> list[Event]:
    """The agent's latest events: what it did, and what the system did to it (lease expiries)."""
    return list(
        Event.objects.filter(project=project)
        .filter(Q(actor_kind=Event.ActorKind.AGENT, actor_id=agent_id) | Q(data__agent=agent_id))
        .select_related("task")
        .order_by("-timestamp", "-id")[:limit]
    )
