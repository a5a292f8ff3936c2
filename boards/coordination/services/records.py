"""Append-style records of the blackboard: discoveries, anomalies, notes, spec changes, log."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Anomaly, Event, SpecChange, anomaly_details_errors
from boards.coordination.models.tasks import Discovery, HumanNote, Task
from boards.coordination.services.actors import ANY_AGENT, Actor, actor_ref
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    ADMIN,
    DECLARED,
    MEMBER,
    agents_only,
    people,
    require_role,
)
from boards.coordination.services.cleaning import clean_text, resolve_key
from boards.coordination.services.locking import lock_project
from boards.coordination.services.tasks.planning import NEW_TASK_FIELDS, task_create
from boards.errors import ProtocolValidationError, Throttled

# Called inside the triage's transaction: its refusal is logged once, by the triage.
_create = task_create.__wrapped__


@people(MEMBER)
@records_refusals
def discovery_create(
    *,
    project: Project,
    actor: Actor,
    description: str,
    severity: str,
    now: datetime,
    urgency: str = "deferred",
    during: str | None = None,
    recommendation: str = "",
) -> Discovery:
    """Log a finding instead of scope-creeping (seed 002 `discovered`)."""
    attempt = Attempt(project, actor, "discovery_create", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    description = clean_text(description, "description", max_length=5000)
    if severity not in p.DISCOVERY_SEVERITIES:
        raise ProtocolValidationError("severity", f"one of {', '.join(p.DISCOVERY_SEVERITIES)}")
    if urgency not in p.DISCOVERY_URGENCIES:
        raise ProtocolValidationError("urgency", f"one of {', '.join(p.DISCOVERY_URGENCIES)}")
    task = resolve_key(project, during, "during")
    with transaction.atomic():
        # disc-N numbering is per project; the project row lock serializes concurrent reporters.
        lock_project(project)
        number = Discovery.objects.filter(project=project).count() + 1
        while Discovery.objects.filter(project=project, disc_id=f"disc-{number}").exists():
            number += 1
        discovery = Discovery.objects.create(
            project=project,
            disc_id=f"disc-{number}",
            by=actor_ref(actor)[1],
            during=task.key if task else "",
            description=description,
            severity=severity,
            urgency=urgency,
            recommendation=clean_text(recommendation, "recommendation", required=False),
            created=now,
        )
        attempt.record(
            action="discovered",
            task=task,
            detail=f"{discovery.disc_id} ({severity}, {urgency}): {description}",
            data={"discovery": discovery.disc_id},
        )
    return discovery


@people(MEMBER)
@records_refusals
def anomaly_create(
    *,
    project: Project,
    actor: Actor,
    anomaly_type: str,
    details: Any,
    now: datetime,
    task: str | None = None,
) -> Anomaly:
    """Record an anomaly; unknown type or a missing required details field → 400."""
    attempt = Attempt(project, actor, "anomaly_create", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    if not isinstance(anomaly_type, str) or anomaly_type not in p.ANOMALY_REQUIRED_FIELDS:
        raise ProtocolValidationError("type", f"one of {', '.join(p.ANOMALY_TYPES)}")
    errors = anomaly_details_errors(anomaly_type, details)
    if errors:
        field, message = next(iter(errors.items()))
        raise ProtocolValidationError(field, message)
    task_row = resolve_key(project, task, "task")
    reporter = actor_ref(actor)[1]
    _refuse_anomaly_flood(project, reporter, now)
    with transaction.atomic():
        anomaly = Anomaly.objects.create(
            project=project,
            task=task_row,
            timestamp=now,
            reporter=reporter,
            type=anomaly_type,
            details=details,
        )
        attempt.record(
            action="anomaly",
            task=task_row,
            detail=f"{anomaly_type}: " + ", ".join(f"{k}={v}" for k, v in details.items())[:400],
            data={"type": anomaly_type},
        )
    return anomaly


def _refuse_anomaly_flood(project: Project, reporter: str, now: datetime) -> None:
    """One reporter logs at most `p.ANOMALY_RATE_LIMIT` anomalies per `p.ANOMALY_RATE_WINDOW`
    seconds (issue #27: 300 in 5 s from one key checkpointed a sprint)."""
    since = now - timedelta(seconds=p.ANOMALY_RATE_WINDOW)
    recent = Anomaly.objects.filter(project=project, reporter=reporter, timestamp__gt=since)
    if recent.count() >= p.ANOMALY_RATE_LIMIT:
        raise Throttled(
            f"at most {p.ANOMALY_RATE_LIMIT} anomalies per {p.ANOMALY_RATE_WINDOW} s per "
            "reporter; log the repeats as one (details.count)",
            retry_after=p.ANOMALY_RATE_WINDOW,
        )


@people(MEMBER)
@records_refusals
def human_note_create(
    *, project: Project, actor: Actor, message: str, now: datetime, task: str | None = None
) -> HumanNote:
    """A note from a human, for a task or the whole project (seed 002 `human_notes`)."""
    attempt = Attempt(project, actor, "human_note_create", now)
    require_role(attempt, agent_roles=())
    message = clean_text(message, "message", max_length=5000)
    task_row = resolve_key(project, task, "task")
    with transaction.atomic():
        note = HumanNote.objects.create(
            project=project, task=task_row, timestamp=now, message=message, author=actor
        )
        attempt.record(action="human_note", task=task_row, detail=message)
    return note


@people(ADMIN)
@records_refusals
def spec_change_record(
    *,
    project: Project,
    actor: Actor,
    spec: str,
    change: str,
    now: datetime,
    triggered_by: str = "",
) -> SpecChange:
    """Append to the spec history (seed 002 `spec_changes`, append-only)."""
    attempt = Attempt(project, actor, "spec_change_record", now)
    require_role(attempt, agent_roles=("planner",))
    with transaction.atomic():
        record = SpecChange.objects.create(
            project=project,
            timestamp=now,
            spec=clean_text(spec, "spec", max_length=500),
            change=clean_text(change, "change", max_length=5000),
            triggered_by=clean_text(triggered_by, "triggered_by", required=False, max_length=200),
        )
        attempt.record(action="spec_changed", detail=f"{record.spec}: {record.change}")
    return record


@agents_only
@records_refusals
def activity_log(
    *,
    project: Project,
    actor: Agent,
    action: str,
    detail: str,
    now: datetime,
    task: str | None = None,
) -> Event:
    """Seed 002 "Log activity": an agent appends a line to the log."""
    attempt = Attempt(project, actor, "activity_log", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    action = clean_text(action, "action", max_length=64)
    if not p.TASK_KEY_RE.match(action):
        raise ProtocolValidationError("action", "a short word: letters, digits, '_', '-', '.'")
    detail = clean_text(detail, "detail", max_length=500)
    if "\n" in detail:
        raise ProtocolValidationError("detail", "one line (seed 002: one-line detail)")
    task_row = resolve_key(project, task, "task")
    with transaction.atomic():
        return attempt.record(action=action, task=task_row, detail=detail)


TRIAGE_DECISIONS: dict[str, str] = {
    "convert": Discovery.Triage.CONVERTED,
    "defer": Discovery.Triage.DEFERRED,
    "reject": Discovery.Triage.REJECTED,
}

# What a discovery may be converted into: task_create's fields.
CONVERT_FIELDS: frozenset[str] = NEW_TASK_FIELDS | {"depends_on", "sprint_scope"}


@people(MEMBER)
@records_refusals
def discovery_triage(
    *,
    discovery: Discovery,
    actor: Actor,
    decision: str,
    now: datetime,
    note: str = "",
    task: dict[str, Any] | None = None,
) -> Discovery:
    """A human triages a discovery (SPEC §3, §7).

    `convert` creates a DRAFT task from `task` (key, and optionally description — the
    discovery's by default — and task_create's other fields) and needs the admin role: it
    creates work. `defer` and `reject` need a member. Converted or rejected discoveries are
    settled (409); a deferred one may still be converted or rejected.
    """
    project = discovery.project
    if decision not in TRIAGE_DECISIONS:
        raise ProtocolValidationError("decision", f"one of {', '.join(TRIAGE_DECISIONS)}")
    attempt = Attempt(project, actor, "discovery_triage", now)
    # Converting creates work: a member triages, an admin converts.
    require_role(attempt, agent_roles=(), human=ADMIN if decision == "convert" else DECLARED)
    note = clean_text(note, "note", required=False, max_length=2000)
    spec: dict[str, Any] = {}
    if decision == "convert":
        if not isinstance(task, dict):
            raise ProtocolValidationError("task", "the task to create (key, description, …)")
        unknown = sorted(set(task) - CONVERT_FIELDS)
        if unknown:
            raise ProtocolValidationError(f"task.{unknown[0]}", "unknown field")
        if not task.get("key"):
            raise ProtocolValidationError("task.key", "is required to convert a discovery")
        spec = dict(task)
        spec.setdefault("description", discovery.description)
    elif task:
        raise ProtocolValidationError("task", "only a conversion creates a task")
    with transaction.atomic():
        discovery = Discovery.objects.select_for_update().get(pk=discovery.pk)
        settled = discovery.triage in (Discovery.Triage.CONVERTED, Discovery.Triage.REJECTED)
        if settled or discovery.converted_to_task or discovery.triage == TRIAGE_DECISIONS[decision]:
            state = "converted" if discovery.converted_to_task else discovery.triage
            raise attempt.conflict(
                f"{discovery.disc_id} is already {state}",
                details={"discovery": discovery.disc_id, "triage": state},
            )
        created: Task | None = None
        if decision == "convert":
            depends_on = spec.pop("depends_on", None) or ()
            created = _create(project=project, actor=actor, now=now, depends_on=depends_on, **spec)
            discovery.converted_to_task = created.key
        discovery.triage = TRIAGE_DECISIONS[decision]
        discovery.triage_note = note
        discovery.save(update_fields=["triage", "triage_note", "converted_to_task"])
        outcome = f"converted into {created.key}" if created else TRIAGE_DECISIONS[decision]
        attempt.record(
            action=f"discovery_{TRIAGE_DECISIONS[decision]}",
            task=created,
            detail=f"{discovery.disc_id} {outcome}" + (f": {note}" if note else ""),
            data={"discovery": discovery.disc_id},
        )
    return discovery
