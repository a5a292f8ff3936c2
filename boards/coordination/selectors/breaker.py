"""The circuit breaker's state, as coordination reads it: whether work stops (TRIGGERED), what
the board and the API show, the trip a resolution closes. The patterns that trip it are the
watcher's (`boards.watch.selectors.breaker`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection

from boards.coordination import rows
from boards.coordination.models.projects import Project
from boards.coordination.models.records import CircuitBreaker, CircuitBreakerCheck

TRIGGERED = CircuitBreaker.Status.TRIGGERED

# The report's file name in the original (seed 002 `current_trigger.report_file`); here the
# report lives in the trip's history row and is shown at /p/<slug>/breaker.
REPORT_FILE = "circuit_breaker_report.md"


@dataclass(frozen=True)
class BreakerState:
    status: str
    last_check: datetime | None
    current_trigger: dict[str, Any] | None
    report: dict[str, Any] | None  # the current trip's; else the last trip's (resolved)
    report_check: CircuitBreakerCheck | None
    history: list[CircuitBreakerCheck]

    @property
    def triggered(self) -> bool:
        return self.status == TRIGGERED


def breaker_status(*, project: Project) -> CircuitBreaker:
    """The project's breaker row (an unsaved OK one for a project made before breakers)."""
    row = rows.fetch(CircuitBreaker, _breaker_sql(), [project.pk])
    return row or CircuitBreaker(project=project)


@cache
def _breaker_sql() -> str:
    return breaker_sql("%s")


def breaker_sql(project: str) -> str:
    """The project's breaker row as SQL, for the project `project` (a placeholder, or a column
    of an enclosing statement: the board header reads it beside the sprint)."""
    quote = connection.ops.quote_name
    return rows.select_sql(
        CircuitBreaker, f"{quote('project_id')} = {project}", tail=f"ORDER BY {quote('id')} LIMIT 1"
    )


def breaker_state(*, project: Project) -> BreakerState:
    breaker = breaker_status(project=project)
    history = list(CircuitBreakerCheck.objects.filter(project=project).order_by("timestamp", "id"))
    trips = [check for check in history if check.report is not None]
    last = trips[-1] if trips else None
    return BreakerState(
        status=breaker.status,
        last_check=breaker.last_check,
        current_trigger=breaker.current_trigger,
        report=last.report if last else None,
        report_check=last,
        history=history,
    )


def breaker_open_trip(*, project: Project) -> CircuitBreakerCheck | None:
    """The history entry of the trip a resolution closes: the latest TRIGGERED entry without
    a resolution (None for a TRIGGERED state imported without one)."""
    for check in CircuitBreakerCheck.objects.filter(project=project, result=TRIGGERED).order_by(
        "-timestamp", "-id"
    ):
        if not (check.details or {}).get("resolution"):
            return check
        break
    return None
