"""The cost figures (issue 24), from the usage rows first reported within the period: USD and
tokens per UTC day, per agent and per task, and everything a task merged within the period
cost."""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal

from django.db.models import F, Sum
from django.db.models.functions import TruncDate

from agents.models import RunUsage
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.insights.selectors.figures import (
    Cost,
    CostFigures,
    Period,
)
from boards.protocol import TaskStatus

_TOKENS = F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")


def _costs(rows, key: str) -> list[tuple[object, Cost]]:
    """Usage rows summed by `key`, as (key, Cost), most expensive first."""
    summed = rows.values_list(key).annotate(usd=Sum("cost_usd"), tokens=Sum(_TOKENS)).order_by()
    costs = [(k, Cost(usd or Decimal(0), int(tokens or 0))) for k, usd, tokens in summed]
    return sorted(costs, key=lambda kc: (-kc[1].usd, -kc[1].tokens, str(kc[0])))


def cost_figures(*, project: Project, period: Period) -> CostFigures:
    """Issue 24: what the period's runs cost, by day, agent and task, and what each task merged
    in the period cost in all (four queries)."""
    rows = RunUsage.objects.filter(
        project=project, recorded_at__gte=period.start, recorded_at__lt=period.end
    )
    by_day = dict(_costs(rows.annotate(day=TruncDate("recorded_at", tzinfo=UTC)), "day"))
    merged = Event.objects.filter(
        project=project,
        outcome=Event.Outcome.APPLIED,
        to_status=TaskStatus.MERGED,
        timestamp__gte=period.start,
        timestamp__lt=period.end,
    ).values("task_id")
    return CostFigures(
        per_day=[(day, by_day.get(day, Cost())) for day in period.days],
        per_agent=_costs(rows, "agent__agent_id"),
        per_task=[(key or "", cost) for key, cost in _costs(rows, "task__key")],
        per_merged_task=_costs(
            RunUsage.objects.filter(project=project, task_id__in=merged), "task__key"
        ),
    )


# The per-stay work on PostgreSQL. `history` is the state history (`_history_query`'s rows,
# read from the covering index `event_state_history` alone: no event row, no JSON); `stays`
# collapses repeated states (a takeover, LAG) and gives each stay the moment it was left (LEAD),
# both windows over the index's own order, so nothing is sorted for them. One statement, four
# parts told apart by `part` (the CTEs are computed once):
#   cfd    (state, lo, hi, n): n stays holding at the samples lo..hi-1 (the CFD's deltas;
#          lo and hi count the samples *before* the moment, as bisect_left does, by arithmetic:
#          see `_SAMPLES_BEFORE`)
#   rank   each non-terminal state's count and, from one sort of its durations
#          (`percentile_disc` at the middle of each wanted position), the values at the two
#          closest ranks of p50 and of p90, the longest and the SLOWEST-th longest
#   stay   the stays at least as long as the SLOWEST-th longest (ties come along for Python to
#          order by key)
#   event  each merge and approval in the period, in history order (throughput, lead and
#          cycle times, review rounds; a few thousand rows at most); the board snapshot's JSON
#          is read for these rows only
# Measured on bench/insights.py's history (bench/README.md "Insights", PostgreSQL's CPU in the
# same runs): the former statement (EXTRACT's numeric epochs, the wide event rows, a sort for
# each window, the ranks by window functions over the text state) 352-374 ms, this one 242-264.
