"""The circuit breaker's patterns (original-liza.md §2.7, seed 002 `circuit_breaker`): each one
a read of the open sprint's anomalies (or tasks) that returns its evidence, or None.

Semantics, decided once here (docs/decisions.md "Circuit breaker"):
- the window is the open sprint (the protocol's; liza-analyze.sh scanned every anomaly [Δ]):
  anomalies logged at or after the sprint started, tasks in its planned or stretch scope;
- values match exactly (no similarity): strings as written, other JSON values by their
  canonical JSON; an absent or empty value groups with nothing;
- one reporter's anomalies sharing a pattern's value count at most `p.BREAKER_PER_REPORTER`
  per `p.BREAKER_REPORTER_WINDOW` seconds (`counted`): distinct occurrences, not repeats;
- thresholds are v1's: retry_cluster needs ≥ 3 retry_loop in total and one error_pattern
  shared by ≥ 2; the other anomaly patterns need ≥ 2 sharing a value (debt_accumulation:
  ≥ 3 trade_off with `debt_created: true`); review_churn a task with review_cycles_total at
  the project's `review_churn_threshold`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from boards import protocol as p
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Anomaly, CircuitBreaker, CircuitBreakerCheck
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.sprints import sprint_open

# The breaker's statuses, also the `result` of its history entries (seed 002).
TRIGGERED = CircuitBreaker.Status.TRIGGERED


OK = CircuitBreaker.Status.OK


@dataclass(frozen=True)
class EvidenceRow:
    """One row of the report's evidence table: a shared value (or a task) and what shares it."""

    value: str
    count: int
    tasks: tuple[str, ...]
    anomalies: tuple[int, ...]  # Anomaly primary keys


@dataclass(frozen=True)
class PatternMatch:
    pattern: str
    severity: str
    condition: str  # what matched, in words
    rows: tuple[EvidenceRow, ...]
    # What this evidence is made of ("anomaly:<pk>", "task:<pk>"): a pattern trips again only
    # on evidence with a key that no earlier trip reported (boards.watch.services.breaker).
    keys: frozenset[str]


def breaker_window(*, project: Project) -> Sprint | None:
    """The sprint the breaker watches: the open one (none open, nothing to watch)."""
    return sprint_open(project=project)


def sprint_anomalies(*, sprint: Sprint) -> list[Anomaly]:
    """The anomalies logged during `sprint` (from its start; it is open, so no end)."""
    rows = Anomaly.objects.filter(project_id=sprint.project_id).select_related("task")
    if sprint.started is not None:
        rows = rows.filter(timestamp__gte=sprint.started)
    return list(rows.order_by("timestamp", "id"))


def _value(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        return raw
    return json.dumps(raw, sort_keys=True)


def _details(anomaly: Anomaly) -> dict[str, Any]:
    return anomaly.details if isinstance(anomaly.details, dict) else {}


def _detail(anomaly: Anomaly, *names: str) -> str | None:
    """The first of `names` present in the anomaly's details (workaround_pattern falls back
    from root_cause to what, as liza-analyze.sh does)."""
    details = _details(anomaly)
    for name in names:
        value = _value(details.get(name))
        if value is not None:
            return value
    return None


def _groups(anomalies: Iterable[Anomaly], value: Callable[[Anomaly], str | None]):
    groups: dict[str, list[Anomaly]] = {}
    for anomaly in anomalies:
        key = value(anomaly)
        if key is not None:
            groups.setdefault(key, []).append(anomaly)
    return groups


def _row(value: str, anomalies: Sequence[Anomaly]) -> EvidenceRow:
    tasks = sorted({a.task.key for a in anomalies if a.task is not None})
    return EvidenceRow(value, len(anomalies), tuple(tasks), tuple(a.pk for a in anomalies))


def _match(pattern: str, condition: str, groups: dict[str, list[Anomaly]]) -> PatternMatch:
    rows = tuple(_row(value, group) for value, group in groups.items())
    keys = frozenset(f"anomaly:{pk}" for row in rows for pk in row.anomalies)
    return PatternMatch(pattern, p.BREAKER_PATTERNS[pattern], condition, rows, keys)


def _of_type(anomalies: Iterable[Anomaly], *types: str) -> list[Anomaly]:
    return [a for a in anomalies if a.type in types]


def counted(anomalies: Iterable[Anomaly], value: Callable[[Anomaly], str | None]) -> list[Anomaly]:
    """The anomalies a pattern counts: of one reporter's anomalies with the same `value`, at
    most `p.BREAKER_PER_REPORTER` within any `p.BREAKER_REPORTER_WINDOW` seconds (issue #27: 300
    identical retry_loop from one key in 5 s are one occurrence, not 300)."""
    window = timedelta(seconds=p.BREAKER_REPORTER_WINDOW)
    kept: list[Anomaly] = []
    seen: dict[tuple[str, str | None], list[datetime]] = {}
    for anomaly in sorted(anomalies, key=lambda a: (a.timestamp, a.pk or 0)):
        times = seen.setdefault((anomaly.reporter, value(anomaly)), [])
        recent = [t for t in times if anomaly.timestamp - t < window]
        if len(recent) < p.BREAKER_PER_REPORTER:
            kept.append(anomaly)
            times.append(anomaly.timestamp)
    return kept


def _shared(
    pattern: str,
    anomalies: Sequence[Anomaly],
    types: tuple[str, ...],
    fields: tuple[str, ...],
    what: str,
) -> PatternMatch | None:
    """≥ 2 anomalies of `types` with the same value of the first present of `fields`."""

    def value(a: Anomaly) -> str | None:
        return _detail(a, *fields)

    groups = _groups(counted(_of_type(anomalies, *types), value), value)
    shared = {value: group for value, group in groups.items() if len(group) >= 2}
    if not shared:
        return None
    return _match(pattern, f"{' or '.join(types)} with the same {what} ≥ 2", shared)


def retry_cluster(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    """≥ 3 retry_loop in the sprint and one error_pattern shared by ≥ 2 (v1's thresholds)."""

    def value(a: Anomaly) -> str | None:
        return _detail(a, "error_pattern")

    loops = counted(_of_type(anomalies, "retry_loop"), value)
    groups = _groups(loops, value)
    if len(loops) < 3 or not any(len(group) >= 2 for group in groups.values()):
        return None
    return _match(
        "retry_cluster",
        f"{len(loops)} retry_loop (≥ 3), an error_pattern shared by ≥ 2",
        groups,
    )


def debt_accumulation(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    """≥ 3 trade_off with `debt_created: true` (a JSON true: the string "true" is not)."""
    debts = counted(
        [a for a in _of_type(anomalies, "trade_off") if _details(a).get("debt_created") is True],
        lambda a: _detail(a, "what"),
    )
    if len(debts) < 3:
        return None
    groups = _groups(debts, lambda a: _detail(a, "what") or "(no what)")
    return _match("debt_accumulation", f"{len(debts)} trade_off with debt_created (≥ 3)", groups)


def assumption_cascade(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    return _shared(
        "assumption_cascade", anomalies, ("assumption_violated",), ("assumption",), "assumption"
    )


def workaround_pattern(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    return _shared(
        "workaround_pattern",
        anomalies,
        ("workaround", "trade_off"),
        ("root_cause", "what"),
        "root_cause (else what)",
    )


def spec_gap_cluster(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    return _shared("spec_gap_cluster", anomalies, ("spec_ambiguity",), ("spec_ref",), "spec_ref")


def external_service_outage(*, anomalies: Sequence[Anomaly]) -> PatternMatch | None:
    return _shared(
        "external_service_outage",
        anomalies,
        ("external_blocker",),
        ("blocker_service",),
        "blocker_service",
    )


def review_churn(*, sprint: Sprint, config: ProjectConfig) -> PatternMatch | None:
    """A task of the sprint's scope whose review_cycles_total reached the threshold."""
    threshold = config.review_churn_threshold
    scope = Task.objects.filter(project_id=sprint.project_id, review_cycles_total__gte=threshold)
    churned = list(
        (scope.filter(planned_in=sprint) | scope.filter(stretch_in=sprint))
        .distinct()
        .order_by("key")
    )
    if not churned:
        return None
    window = Anomaly.objects.filter(task__in=churned)
    if sprint.started is not None:
        window = window.filter(timestamp__gte=sprint.started)
    anomalies: dict[int, list[int]] = {}
    for task_id, pk in window.order_by("pk").values_list("task_id", "pk"):
        anomalies.setdefault(task_id, []).append(pk)
    rows = tuple(
        EvidenceRow(
            f"{task.review_cycles_total} review cycles",
            task.review_cycles_total,
            (task.key,),
            tuple(anomalies.get(task.pk, ())),
        )
        for task in churned
    )
    return PatternMatch(
        "review_churn",
        p.BREAKER_PATTERNS["review_churn"],
        f"a task with review_cycles_total ≥ {threshold}",
        rows,
        frozenset(f"task:{task.pk}" for task in churned),
    )


ANOMALY_PATTERNS: dict[str, Callable[..., PatternMatch | None]] = {
    "retry_cluster": retry_cluster,
    "debt_accumulation": debt_accumulation,
    "assumption_cascade": assumption_cascade,
    "workaround_pattern": workaround_pattern,
    "spec_gap_cluster": spec_gap_cluster,
    "external_service_outage": external_service_outage,
}


def breaker_matches(*, sprint: Sprint, config: ProjectConfig) -> list[PatternMatch]:
    """Every pattern that holds in `sprint`, in precedence order (p.BREAKER_PATTERNS)."""
    anomalies = sprint_anomalies(sprint=sprint)
    found = []
    for pattern in p.BREAKER_PATTERNS:
        if pattern == "review_churn":
            match = review_churn(sprint=sprint, config=config)
        else:
            match = ANOMALY_PATTERNS[pattern](anomalies=anomalies)
        if match is not None:
            found.append(match)
    return found


def breaker_reported_keys(*, project: Project) -> frozenset[str]:
    """The evidence keys of every trip so far: evidence made only of these trips nothing."""
    keys: set[str] = set()
    for report in CircuitBreakerCheck.objects.filter(
        project=project, report__isnull=False
    ).values_list("report", flat=True):
        keys.update(report.get("keys", []))
    return frozenset(keys)


def breaker_checklist(severity: str) -> list[str]:
    """The human checklist of a trip (liza-analyze.sh's report ends with one)."""
    return [
        "Read the evidence table and the anomalies below: is the pattern real?",
        p.BREAKER_SEVERITIES[severity],
        "Decide for the tasks involved: continue, rescope, abandon, or abort the sprint.",
        "Resolve the circuit breaker here with a written reason (kept in its history).",
        "Continue the sprint from the board (its checkpoint) once the decision is made.",
    ]


def _row_json(row: EvidenceRow) -> dict[str, Any]:
    return {
        "value": row.value,
        "count": row.count,
        "tasks": list(row.tasks),
        "anomalies": list(row.anomalies),
    }


def _anomaly_json(anomaly: Anomaly) -> dict[str, Any]:
    """Seed 002's `anomalies[]` entry (the original's report pastes the raw YAML)."""
    return {
        "id": anomaly.pk,
        "timestamp": p.format_timestamp(anomaly.timestamp),
        "task": anomaly.task.key if anomaly.task else None,
        "reporter": anomaly.reporter,
        "type": anomaly.type,
        "details": anomaly.details,
    }


def breaker_report(
    *, sprint: Sprint, matches: Sequence[PatternMatch], now: datetime
) -> dict[str, Any]:
    """What a trip stores to render its report: the LAST match (precedence) names the pattern
    and the one severity; the others are listed as also matched; their evidence is covered by
    this trip too."""
    head = matches[-1]
    ids = sorted({pk for match in matches for row in match.rows for pk in row.anomalies})
    anomalies = (
        Anomaly.objects.filter(pk__in=ids).select_related("task").order_by("timestamp", "id")
    )
    return {
        "triggered": p.format_timestamp(now),
        "sprint": sprint.sprint_id,
        "pattern": head.pattern,
        "severity": head.severity,
        "condition": head.condition,
        "evidence": [_row_json(row) for row in head.rows],
        "also_matched": [
            {
                "pattern": m.pattern,
                "severity": m.severity,
                "condition": m.condition,
                "evidence": [_row_json(row) for row in m.rows],
            }
            for m in matches[:-1]
        ],
        "anomalies": [_anomaly_json(a) for a in anomalies],
        "checklist": breaker_checklist(head.severity),
        "keys": sorted({key for match in matches for key in match.keys}),
    }
