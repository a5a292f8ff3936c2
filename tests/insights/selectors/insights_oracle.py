"""The insights' reference model: the per-stay figures computed the plain way, in Python over
each task's state history, by the definitions of boards/insights/selectors/insights.py.

The product computes them in one SQL statement (`_flow_sql`); this walk was its second path
while SQLite was the embedded default. It stays here as the oracle the SQL is held equal to
(test_insights_paths.py, tests/interop/test_demo.py), small enough to check by reading.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict

from django.db import connection
from django.db.models import Case, CharField, Q, When
from django.db.models.fields.json import KT

from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.insights.selectors.figures import epoch_moment
from boards.insights.selectors.insights import (
    SLOWEST,
    Epoch,
    Period,
    Spread,
    StateTimes,
    Stay,
    _Flow,
    _history_query,
    _task_rows,
)
from boards.protocol import TaskStatus

# One state-history row: (epoch, to_status, assignee at approval, rejections at approval).
Row = tuple[float, str, str | None, str | None]


def state_history(project: Project, period: Period) -> dict[int, list[Row]]:
    """Each task's applied transitions up to the period's end, in order (one query)."""
    at_approval = Q(to_status=TaskStatus.APPROVED)
    rows = (
        _history_query(project, period)
        .order_by("task_id", "timestamp", "id")
        .values_list(
            "task_id",
            Epoch("timestamp"),
            "to_status",
            # Only the approvals need the snapshot's fields: the rest skip the JSON (50k rows).
            Case(When(at_approval, then=KT("board__assigned_to")), output_field=CharField()),
            Case(
                When(at_approval, then=KT("board__review_cycles_total")), output_field=CharField()
            ),
        )
    )
    # Straight from the cursor: Django's per-value converters cost a tenth of the page here.
    with connection.cursor() as cursor:
        cursor.execute(*rows.query.sql_with_params())
        fetched = cursor.fetchall()
    history: dict[int, list[Row]] = defaultdict(list)
    for task_id, *row in fetched:
        history[task_id].append(row)
    return history


def stays_of(rows: list[Row]):
    """(state, entered, left or None) for each stay; a repeated state (a takeover: CLAIMED →
    CLAIMED) continues the stay."""
    stays: list[list] = []
    for timestamp, state, *_ in rows:
        if stays and stays[-1][0] == state:
            continue
        if stays:
            stays[-1][2] = timestamp
        stays.append([state, timestamp, None])
    return stays


def flow_reference(project: Project, period: Period) -> tuple[int, _Flow]:
    """Each task's state history read whole, its stays walked in Python: the figures by the
    definitions, for `_flow_sql` to equal."""
    tasks = {
        pk: (key, created)
        for pk, key, created in _task_rows(project, period)
        .values_list("id", "key", Epoch("created"))
        .order_by()
    }
    history = state_history(project, period)
    start, end = period.start.timestamp(), period.end.timestamp()
    first_day = period.days[0]

    samples = [moment.timestamp() for moment in period.samples()]
    steps = {state: [0] * (len(samples) + 1) for state in p.TASK_STATES}
    durations: dict[str, list[tuple[float, str, float, bool]]] = defaultdict(list)
    flow = _Flow(steps, [])
    terminal = p.TERMINAL_TASK_STATES
    for task_id, rows in history.items():
        key, created = tasks.get(task_id, ("?", None))
        for state, entered, left in stays_of(rows):
            # The CFD: this state holds at every sample in [entered, left).
            lo = bisect.bisect_left(samples, entered)
            hi = len(samples) if left is None else bisect.bisect_left(samples, left)
            if lo < hi:
                counts = steps.setdefault(state, [0] * (len(samples) + 1))
                counts[lo] += 1
                counts[hi] -= 1
            if state in terminal or (left is not None and left < start):
                continue
            ongoing = left is None
            # Negated: the slowest sort first as plain tuples (then by key), no key function.
            durations[state].append((entered - (end if ongoing else left), key, entered, ongoing))
        if rows[-1][0] < start:
            continue  # nothing of this task happened in the period
        first_claim = next((r[0] for r in rows if r[1] == TaskStatus.CLAIMED), None)
        for timestamp, state, assignee, rejections in rows:
            if timestamp < start:
                continue
            if state == TaskStatus.MERGED:
                flow.merged_on[(epoch_moment(timestamp).date() - first_day).days] += 1
                if created is not None:
                    flow.lead.append(timestamp - created)
                if first_claim is not None:
                    flow.cycle.append(timestamp - first_claim)
            elif state == TaskStatus.APPROVED and rejections is not None:
                needed = int(rejections) + 1
                flow.rounds[needed] += 1
                flow.rounds_of[assignee or ""].append(needed)
    for state in p.NON_TERMINAL_TASK_STATES:
        stays = durations[state]
        slowest = heapq.nsmallest(SLOWEST, stays)
        flow.time_in_state.append(
            StateTimes(
                state,
                Spread.of([-stay[0] for stay in stays]),
                [Stay(k, state, epoch_moment(at), -negated, on) for negated, k, at, on in slowest],
            )
        )
    return len(tasks), flow
