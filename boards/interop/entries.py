"""A project's rows as seed 002's entries, one function per section (goal, tasks and their
history, agents, discoveries, handoffs, notes, spec changes, anomalies, sprint, circuit breaker,
config) and per log entry: plain Python values in the order and with the types the original Liza
writes, for `exporting.export_state` / `export_log`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.db.models import Prefetch

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Goal, Project, ProjectConfig, Sprint
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.coordination.selectors.sprints import sprint_metrics

from .events import SUMMARY_LENGTH, View, derived_actor_kind, event_data, in_history
from .schema import (
    ALIGNMENT_KEYS,
    BREAKER_CHECK_RESERVED,
    EXTRA_CONFIG_KEYS,
    HANDOFF_FIELDS,
    HANDOFF_OPTIONAL,
    HISTORY_RESERVED,
    LOG_RESERVED,
    QUORUM_APPROVED_BY,
    REVIEW_KEYS,
    SPRINT_METRIC_KEYS,
    TASK_ALWAYS,
    TASK_DEPENDS_ON_AFTER,
    TASK_FIELDS,
    TASK_REVIEW_KEYS_AFTER,
    Kind,
)


def _ts(value: datetime | None) -> datetime | None:
    """Seed 002 "Timestamp Format" is to the second; the datetime is what dump_yaml writes."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(microsecond=0)


def _ts_text(value: Any) -> Any:
    """A stored Z string back to a datetime (written plain, like every other timestamp)."""
    try:
        return _ts(p.parse_timestamp(value))
    except (ValueError, TypeError, OverflowError):
        return value


def natural_key(key: str) -> list[Any]:
    """task-2 before task-10; parts alternate text and number, so lists always compare."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def _ordered(value: Any, first: tuple[str, ...]) -> Any:
    """A JSON mapping with `first` keys in that order, then the rest as stored (jsonb on
    PostgreSQL does not keep the file's key order)."""
    if not isinstance(value, dict):
        return value
    return {
        **{key: value[key] for key in first if key in value},
        **{key: item for key, item in value.items() if key not in first},
    }


def _put_data(
    entry: dict[str, Any], data: dict[str, Any], reserved: frozenset[str], under: str = "data"
) -> None:
    """Event data (or a check's details) beside the entry's own keys; a name the schema reserves
    goes under `under` (`data:`, `details:`)."""
    nested = {}
    for name, value in data.items():
        if name in reserved:
            nested[name] = value
        else:
            entry[name] = value
    if nested:
        entry[under] = nested


def _goal(project: Project) -> dict[str, Any] | None:
    """The IN_PROGRESS goal, else the latest (seed 002 has one `goal`)."""
    goals = Goal.objects.filter(project=project)
    goal = goals.filter(status="IN_PROGRESS").first() or goals.order_by("created", "id").last()
    if goal is None:
        return None
    entry: dict[str, Any] = {"id": goal.goal_id, "description": goal.description}
    if goal.spec_ref:
        entry["spec_ref"] = goal.spec_ref
    entry["created"] = _ts(goal.created)
    entry["status"] = goal.status
    entry["alignment_history"] = [_alignment_entry(item) for item in goal.alignment_history or []]
    return entry


def _alignment_entry(item: Any) -> Any:
    """Seed 002 {timestamp, event, summary}, the timestamp written like every other."""
    if not isinstance(item, dict):
        return item
    item = _ordered(item, ALIGNMENT_KEYS)
    if "timestamp" in item:
        item["timestamp"] = _ts_text(item["timestamp"])
    return item


def _tasks_in_order(project: Project) -> list[Task]:
    # History in append order (Event's default ordering is by time).
    events = Prefetch("events", queryset=Event.objects.order_by("id"))
    tasks = Task.objects.filter(project=project).prefetch_related("depends_on", "reviews", events)
    return sorted(tasks, key=lambda t: (t.created, natural_key(t.key)))


def _keep(name: str, value: Any, task: Task) -> bool:
    """Seed 002 leaves out what a task does not have; so does export."""
    if name in TASK_ALWAYS:
        return True
    if name == "criticality":
        return value != Task.Criticality.STANDARD
    if name in ("review_cycles_current", "review_cycles_total"):
        return value != 0 or task.iteration is not None  # zero counters of a never-claimed task
    return value not in (None, "", [], False)


def _task(task: Task) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": task.key}
    empty = task.file_empty_keys if isinstance(task.file_empty_keys, dict) else {}

    def put(values: dict[str, Any], *names: str) -> None:
        """`values`, then each of `names` they lack that the imported file wrote empty."""
        entry.update(values)
        for name in names:
            if name not in entry and name in empty:
                entry[name] = empty[name]

    for name, kind in TASK_FIELDS.items():
        value = getattr(task, name)
        if kind in (Kind.TIME, Kind.TIME_REQUIRED):
            value = _ts(value)
        if name == "approved_by":
            put(_approvers(task), name)
        else:
            put({name: value} if _keep(name, value, task) else {}, name)
        if name == "description":
            entry["status"] = task.status
        elif name == TASK_REVIEW_KEYS_AFTER:
            put(_review_keys(task), *REVIEW_KEYS)
        elif name == TASK_DEPENDS_ON_AFTER:
            deps = sorted((d.key for d in task.depends_on.all()), key=natural_key)
            put({"depends_on": deps} if deps else {}, "depends_on")
    history = [_history_entry(event) for event in task.events.all() if in_history(event)]
    put({"history": history} if history else {}, "history")
    return entry


def _approvers(task: Task) -> dict[str, Any]:
    """`approved_by` as the original writes and reads it: one reviewer id, the first approver
    (the merge query compares it to a string); a quorum's approvers all in QUORUM_APPROVED_BY."""
    approvers = list(task.approved_by or [])
    if not approvers:
        return {}
    entry: dict[str, Any] = {"approved_by": approvers[0]}
    if len(approvers) > 1:
        entry[QUORUM_APPROVED_BY] = approvers
    return entry


def _review_keys(task: Task) -> dict[str, Any]:
    """Seed 002 reviewing_by / review_lease_expires from the open round's pending review with
    the latest lease; `review_round` when one pair cannot say it all (seed 001: two reviewers,
    or an approval already given in this round)."""
    if task.status != p.TaskStatus.READY_FOR_REVIEW:
        return {}
    open_round = [r for r in task.reviews.all() if r.closed_at is None]
    pending = [r for r in open_round if not r.verdict]
    keys: dict[str, Any] = {}
    if pending:
        shown = max(pending, key=lambda r: (r.lease_expires is not None, r.lease_expires, r.pk))
        keys["reviewing_by"] = shown.reviewer
        if shown.lease_expires is not None:
            keys["review_lease_expires"] = _ts(shown.lease_expires)
    if len(open_round) > 1 or any(r.verdict for r in open_round):
        keys["review_round"] = [_round_entry(r) for r in open_round]
    return keys


def _round_entry(review: Review) -> dict[str, Any]:
    entry: dict[str, Any] = {"reviewer": review.reviewer}
    if review.verdict:
        entry["verdict"] = review.verdict
    if review.reason:
        entry["reason"] = review.reason
    if review.lease_expires is not None:
        entry["lease_expires"] = _ts(review.lease_expires)
    return entry


def _history_entry(event: Event) -> dict[str, Any]:
    """Seed 002 task `history`: { time, event, agent, + extra keys such as commit or note }."""
    entry: dict[str, Any] = {"time": _ts(event.timestamp), "event": event.action}
    if event.actor_id:
        entry["agent"] = event.actor_id
    _put_data(entry, event_data(event, View.HISTORY), HISTORY_RESERVED)
    return entry


def _log_entry(event: Event, task_keys: set[str]) -> dict[str, Any]:
    """Seed 002 log.yaml: timestamp, agent, action, task, detail, + what the event adds."""
    entry: dict[str, Any] = {"timestamp": _ts(event.timestamp)}
    if event.actor_id:
        entry["agent"] = event.actor_id
    entry["action"] = event.action
    data = event_data(event, View.LOG)
    if event.task is not None:
        entry["task"] = event.task.key
    elif isinstance(data.get("task"), str) and data["task"] not in task_keys:
        entry["task"] = data.pop("task")  # a task the log names but the board does not have
    full = data.get("detail")
    if isinstance(full, str) and len(full) > SUMMARY_LENGTH and event.detail == _cut(full):
        entry["detail"] = data.pop("detail")  # read back as the same prefix + data
    else:
        entry["detail"] = event.detail
    if event.from_status:
        entry["from"] = event.from_status
    if event.to_status:
        entry["to"] = event.to_status
    if event.outcome != Event.Outcome.APPLIED:
        entry["outcome"] = event.outcome
    if event.actor_kind != derived_actor_kind(event.actor_id):
        entry["actor_kind"] = event.actor_kind
    _put_data(entry, data, LOG_RESERVED)
    return entry


def _cut(text: str) -> str:
    return text[: SUMMARY_LENGTH - 1] + "…"


def _agents(project: Project) -> dict[str, dict[str, Any]]:
    """Seed 002 `agents`, in registration order; the planner's task is spelled `task`.

    An agent that left (`agent_leave`) and has not registered since is not listed: the original
    Liza deletes its registry entry when its supervisor exits (original-liza.md, the agent
    entry), and we refuse its heartbeat as unregistered. Its events stay in the log."""
    agents: dict[str, dict[str, Any]] = {}
    for agent in (
        Agent.objects.filter(project=project, left_at__isnull=True)
        .select_related("current_task")
        .order_by("id")
    ):
        task_key = agent.current_task.key if agent.current_task else None
        entry: dict[str, Any] = {"role": agent.role, "status": agent.status}
        entry["task" if agent.role == Agent.Role.PLANNER else "current_task"] = task_key
        entry["lease_expires"] = _ts(agent.lease_expires)
        entry["heartbeat"] = _ts(agent.heartbeat)
        if agent.terminal:
            entry["terminal"] = agent.terminal
        if agent.iterations_total:
            entry["iterations_total"] = agent.iterations_total
        if agent.context_percent is not None:
            entry["context_percent"] = agent.context_percent
        if not agent.enabled:
            entry["enabled"] = False
        if agent.security_reviewer:
            entry["security_reviewer"] = True
        agents[agent.agent_id] = entry
    return agents


def _discovery(discovery: Discovery) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": discovery.disc_id,
        "by": discovery.by,
        "during": discovery.during or None,
        "description": discovery.description,
        "severity": discovery.severity,
        "urgency": discovery.urgency,
        "recommendation": discovery.recommendation or None,
        "created": _ts(discovery.created),
        "converted_to_task": discovery.converted_to_task or None,
    }
    if discovery.triage != Discovery.Triage.OPEN:
        entry["triage"] = discovery.triage
    if discovery.triage_note:
        entry["triage_note"] = discovery.triage_note
    return entry


def _handoffs(project: Project, order: dict[int, int]) -> dict[str, dict[str, Any]]:
    handoffs = sorted(
        Handoff.objects.filter(project=project).select_related("task"),
        key=lambda h: order.get(h.task_id, len(order)),
    )
    return {h.task.key: _handoff(h) for h in handoffs}


def _handoff(handoff: Handoff) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for name in HANDOFF_FIELDS:
        value = getattr(handoff, name)
        if name in HANDOFF_OPTIONAL and value in ("", []):
            continue
        if name == "timestamp":
            value = _ts(value)
        elif name == "context_used" and value.isdigit():
            value = int(value)  # `context_used: 91` was a number in the file
        entry[name] = value
    return entry


def _notes(project: Project) -> list[HumanNote]:
    return list(HumanNote.objects.filter(project=project).select_related("task", "author"))


def _note(note: HumanNote) -> dict[str, Any]:
    entry: dict[str, Any] = {"timestamp": _ts(note.timestamp), "message": note.message}
    if note.task is not None:
        entry["for"] = note.task.key
    if note.author is not None:
        entry["author"] = note.author.get_username()
    return entry


def _spec_change(change: SpecChange) -> dict[str, Any]:
    return {
        "timestamp": _ts(change.timestamp),
        "spec": change.spec,
        "change": change.change,
        "triggered_by": change.triggered_by or None,
    }


def _anomalies(project: Project) -> list[Anomaly]:
    return list(Anomaly.objects.filter(project=project).select_related("task"))


def _anomaly(anomaly: Anomaly) -> dict[str, Any]:
    return {
        "timestamp": _ts(anomaly.timestamp),
        "task": anomaly.task.key if anomaly.task else None,
        "reporter": anomaly.reporter,
        "type": anomaly.type,
        # Seed 002 "Required Details Fields" first, as the seed writes them.
        "details": _ordered(anomaly.details, p.ANOMALY_REQUIRED_FIELDS.get(anomaly.type, ())),
    }


def _sprint(project: Project) -> dict[str, Any] | None:
    """The open sprint, else the latest (seed 002 has one `sprint`)."""
    sprints = Sprint.objects.filter(project=project).select_related("goal")
    sprint = sprints.filter(status__in=["IN_PROGRESS", "CHECKPOINT"]).first()
    sprint = sprint or sprints.order_by("id").last()
    if sprint is None:
        return None
    return {
        "id": sprint.sprint_id,
        "goal_ref": sprint.goal.goal_id,
        "scope": {
            "planned": sorted((t.key for t in sprint.planned.all()), key=natural_key),
            "stretch": sorted((t.key for t in sprint.stretch.all()), key=natural_key),
        },
        "timeline": {
            "started": _ts(sprint.started),
            "deadline": _ts(sprint.deadline),
            "checkpoint_at": _ts(sprint.checkpoint_at),
            "ended": _ts(sprint.ended),
        },
        "status": sprint.status,
        # The snapshot taken at the sprint's end or carried by an imported file (whose history
        # may be longer than the tasks it kept), else the live figures the board shows.
        "metrics": _ordered(sprint.metrics or sprint_metrics(sprint), SPRINT_METRIC_KEYS),
        "retrospective": sprint.retrospective,
    }


def _breaker(project: Project) -> dict[str, Any]:
    breaker = CircuitBreaker.objects.filter(project=project).first() or CircuitBreaker()
    return {
        "last_check": _ts(breaker.last_check),
        "status": breaker.status,
        "current_trigger": breaker.current_trigger,
        "history": [_check(c) for c in CircuitBreakerCheck.objects.filter(project=project)],
    }


def _check(check: CircuitBreakerCheck) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "timestamp": _ts(check.timestamp),
        "pattern": check.pattern or None,
        "result": check.result,
    }
    _put_data(entry, check.details or {}, BREAKER_CHECK_RESERVED, under="details")
    return entry


def _config(project: Project) -> dict[str, Any]:
    """Seed 002 `config` keys in order; lease_grace / archive_after_days when not the default."""
    config = ProjectConfig.objects.filter(project=project).first() or ProjectConfig()
    entry: dict[str, Any] = {name: getattr(config, name) for name in ProjectConfig.SEED_KEYS}
    entry["escalation_webhook"] = config.escalation_webhook or None
    for name in EXTRA_CONFIG_KEYS:
        value = getattr(config, name)
        if value != ProjectConfig._meta.get_field(name).get_default():
            entry[name] = value
    return entry
