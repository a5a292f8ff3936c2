"""The circuit breaker (original-liza.md §2.7, seed 002 `circuit_breaker`, issue #11): the
watcher evaluates it after each sweep's actions, inside the sweep's transaction and lock; a
human resolves a trip.

- A trip sets TRIGGERED and `current_trigger`, appends a history entry carrying the report,
  writes the audited `circuit_breaker_triggered` event and moves the open sprint to CHECKPOINT
  (`sprint_checkpoint`, reason naming the pattern). The critical alert is a watcher condition
  (boards.watch.selectors.watch): open while TRIGGERED, resolved by the sweep after the resolution.
- While TRIGGERED nothing is evaluated. After a resolution a pattern trips again only on
  evidence with something no earlier trip reported (a new anomaly, a newly churning task).
- A check that finds nothing new updates `last_check`; it appends a `{pattern: null, result:
  OK}` history entry only when the last entry is not already one (the original appends one per
  run; at one sweep every 10 s that would flood the history).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from boards import protocol as p
from boards.coordination import outbox
from boards.coordination.models.projects import Project
from boards.coordination.models.records import CircuitBreaker, CircuitBreakerCheck
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.breaker import REPORT_FILE, breaker_open_trip
from boards.coordination.services.actors import SYSTEM, Actor, actor_ref
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.sprints import sprint_checkpoint
from boards.errors import Conflict
from boards.protocol import Action, SprintStatus
from boards.watch.selectors.breaker import (
    OK,
    TRIGGERED,
    breaker_matches,
    breaker_report,
    breaker_reported_keys,
    breaker_window,
)


def _lock_breaker(project: Project) -> CircuitBreaker:
    """The project's breaker row, locked (created OK for a project made before breakers).
    Lock order: the breaker row before the sprint row (a trip checkpoints the sprint)."""
    breaker, _ = CircuitBreaker.objects.select_for_update().get_or_create(project=project)
    return breaker


def _header_changed(project: Project) -> None:
    # The board header's banner and the breaker page follow the status.
    outbox.changed(project.pk, outbox.SPRINT, project.pk, controls=True)


def breaker_evaluate(*, project: Project, now: datetime) -> str:
    """Evaluate the patterns on the open sprint and trip on new evidence; the line the
    watcher logs ("" when nothing happened). Called by `watch_sweep` under its lock."""
    with transaction.atomic():
        breaker = _lock_breaker(project)
        sprint = breaker_window(project=project)
        if breaker.status == TRIGGERED or sprint is None:
            return ""  # a human decides first; no open sprint, no window to watch
        matches = breaker_matches(sprint=sprint, config=config_of(project))
        reported = breaker_reported_keys(project=project)
        fresh = [match for match in matches if not match.keys <= reported]
        breaker.last_check = now
        if not fresh:
            breaker.save(update_fields=["last_check"])
            last = CircuitBreakerCheck.objects.filter(project=project).order_by("-timestamp", "-id")
            entry = last.first()
            if entry is None or entry.result != OK:
                CircuitBreakerCheck.objects.create(
                    project=project, timestamp=now, pattern="", result=OK
                )
            return ""
        report = breaker_report(sprint=sprint, matches=fresh, now=now)
        pattern, severity = report["pattern"], report["severity"]
        breaker.status = TRIGGERED
        breaker.current_trigger = {
            "timestamp": p.format_timestamp(now),
            "pattern": pattern,
            "severity": severity,
            "report_file": REPORT_FILE,
        }
        breaker.save(update_fields=["status", "current_trigger", "last_check"])
        CircuitBreakerCheck.objects.create(
            project=project,
            timestamp=now,
            pattern=pattern,
            result=TRIGGERED,
            details={"severity": severity},
            report=report,
        )
        record_event(
            project=project,
            actor=SYSTEM,
            action=Action.CIRCUIT_BREAKER_TRIGGERED,
            now=now,
            detail=f"circuit breaker triggered in {sprint.sprint_id}: {pattern} ({severity}), "
            f"{report['condition']}",
            data={
                "pattern": pattern,
                "severity": severity,
                "sprint": sprint.sprint_id,
                "also_matched": [m["pattern"] for m in report["also_matched"]],
            },
        )
        if sprint.status == SprintStatus.IN_PROGRESS:
            sprint_checkpoint(
                sprint=sprint,
                actor=SYSTEM,
                reason=f"circuit breaker: {pattern} ({severity}) — see the breaker report",
                now=now,
            )
        _header_changed(project)
    return f"circuit breaker triggered: {pattern} ({severity}) in {sprint.sprint_id}"


@people(ADMIN)
@records_refusals
def circuit_breaker_resolve(
    *, breaker: CircuitBreaker, actor: Actor, reason: str, now: datetime
) -> CircuitBreaker:
    """A project admin resolves a trip with a written reason (seed 002: the human adds
    `resolution` and `resolved_at` to the trip's history entry); the breaker is OK again.
    Continuing the sprint stays its own decision (`sprint_resume`)."""
    project = breaker.project
    require_role(Attempt(project, actor, "circuit_breaker_resolve", now), agent_roles=())
    resolved = Attempt(project, actor, Action.CIRCUIT_BREAKER_RESOLVED, now)  # refused or recorded
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        breaker = _lock_breaker(project)
        if breaker.status != TRIGGERED:
            raise resolved.refuse(
                Conflict(
                    "the circuit breaker is not triggered: there is nothing to resolve",
                    {"status": breaker.status},
                )
            )
        trigger = breaker.current_trigger or {}
        resolution = {
            "resolution": reason,
            "resolved_at": p.format_timestamp(now),
            "resolved_by": actor_ref(actor)[1],
        }
        trip = breaker_open_trip(project=project)
        if trip is not None:
            trip.details = {**(trip.details or {}), **resolution}
            trip.save(update_fields=["details"])
        else:  # TRIGGERED as imported, with no entry of its own: the entry the original adds
            CircuitBreakerCheck.objects.create(
                project=project,
                timestamp=_trigger_time(trigger, now),
                pattern=str(trigger.get("pattern") or ""),
                result=TRIGGERED,
                details={"severity": trigger.get("severity"), **resolution},
            )
        breaker.status = OK
        breaker.current_trigger = None
        breaker.save(update_fields=["status", "current_trigger"])
        resolved.record(
            detail=f"circuit breaker resolved ({trigger.get('pattern') or 'trigger'}): {reason}",
            data={"pattern": trigger.get("pattern"), "severity": trigger.get("severity")},
        )
        _header_changed(project)
    return breaker


def _trigger_time(trigger: dict, default: datetime) -> datetime:
    try:
        return p.parse_timestamp(trigger.get("timestamp"))
    except ValueError:
        return default  # an imported trigger without a readable time
