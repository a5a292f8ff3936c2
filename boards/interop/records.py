"""Reading the record sections of seed 002's state.yaml — discoveries, handoffs, human notes,
spec changes, anomalies, the sprint, the circuit breaker — and the events of log.yaml and of each
task's history, into unsaved rows (`RecordReader`, the base of `reading._Reader`).
"""

from __future__ import annotations

from typing import Any

from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote

from .events import (
    MARKERS,
    SUMMARY_LENGTH,
    PlannedEvent,
    derived_actor_kind,
    history_summary,
)
from .fields import FieldReader, describe, jsonable
from .plan import ImportPlan
from .schema import (
    ANOMALY_FIELDS,
    BREAKER_CHECK_RESERVED,
    DISCOVERY_FIELDS,
    HANDOFF_FIELDS,
    HISTORY_RESERVED,
    LOG_FILE,
    LOG_RESERVED,
    NOTE_FIELDS,
    PROJECT_WIDE_NOTE,
    SPEC_CHANGE_FIELDS,
    SPRINT_TIMELINE,
    STATE_FILE,
    Kind,
)


class RecordReader(FieldReader):
    """The record sections and the log's events; the plan and the task and agent sections are
    the subclass's (`reading._Reader`)."""

    def discoveries(self, raw: list | None) -> list[Discovery]:
        found: list[Discovery] = []
        seen: set[str] = set()
        for where, entry in self.entries(raw, "discovery"):
            disc_id = self.key(entry.get("id"), f"{where}: id", required=True) or ""
            if disc_id in seen:
                self.problem(where, f"duplicate id {disc_id}")
            seen.add(disc_id)
            values = self.fields(entry, DISCOVERY_FIELDS, Discovery, where)
            if entry.get("urgency") is None:  # seed 002: `deferred` unless said otherwise
                values["urgency"] = Discovery.Urgency.DEFERRED
            discovery = Discovery(disc_id=disc_id, **values)
            self.clean(discovery, where, ("project",), {"disc_id": "id"})
            found.append(discovery)
        return found

    def handoffs(self, raw: dict | None) -> list[tuple[str, Handoff]]:
        found = []
        for raw_key, entry in (raw or {}).items():
            where = f"{STATE_FILE}: handoff {raw_key}"
            task_key = self.task_ref(raw_key, where)
            if not isinstance(entry, dict):
                self.problem(where, f"must be a mapping of fields, found {describe(entry)}")
                continue
            handoff = Handoff(**self.fields(entry, HANDOFF_FIELDS, Handoff, where))
            self.clean(handoff, where, ("project", "task"))
            if task_key is not None:
                found.append((task_key, handoff))
        return found

    def notes(self, raw: list | None) -> list[tuple[str | None, HumanNote, str]]:
        found = []
        for where, entry in self.entries(raw, "human note"):
            target = entry.get("for")
            task_key = None if target in (None, PROJECT_WIDE_NOTE) else target
            task_key = self.task_ref(task_key, f"{where}: for")
            note = HumanNote(**self.fields(entry, NOTE_FIELDS, HumanNote, where))
            self.clean(note, where, ("project", "task", "author"))
            author = self.text(entry.get("author"), f"{where}: author")
            found.append((task_key, note, author))
        return found

    def spec_changes(self, raw: list | None) -> list[SpecChange]:
        found = []
        for where, entry in self.entries(raw, "spec change"):
            change = SpecChange(**self.fields(entry, SPEC_CHANGE_FIELDS, SpecChange, where))
            self.clean(change, where, ("project",))
            found.append(change)
        return found

    def anomalies(self, raw: list | None) -> list[tuple[str | None, Anomaly]]:
        """Anomalies: an unknown type is a hard error; missing details fields are not (seed
        002 "Required Details Fields" is a validation rule, reported by validate_state)."""
        found = []
        for where, entry in self.entries(raw, "anomaly"):
            task_key = self.task_ref(entry.get("task"), f"{where}: task")
            anomaly = Anomaly(**self.fields(entry, ANOMALY_FIELDS, Anomaly, where))
            self.clean(anomaly, where, ("project", "task"))
            found.append((task_key, anomaly))
        return found

    def sprint(self, raw: dict | None, plan: ImportPlan) -> None:
        if raw is None:
            return
        where = f"{STATE_FILE}: sprint"
        sprint_id = self.key(raw.get("id"), f"{where}: id", required=True)
        goal_ref = self.key(raw.get("goal_ref"), f"{where}: goal_ref")
        if plan.goal is None:
            self.problem(where, "a sprint belongs to a goal, and this file has none")
        elif goal_ref is not None and goal_ref != plan.goal.goal_id:
            self.problem(
                f"{where}: goal_ref", f"names {goal_ref}, but the goal is {plan.goal.goal_id}"
            )
        status = self.enum(raw.get("status"), p.SPRINT_STATES, f"{where}: status")
        timeline = raw.get("timeline")
        if timeline is not None and not isinstance(timeline, dict):
            self.problem(f"{where}: timeline", f"must be a mapping, found {describe(timeline)}")
            timeline = None
        times = {
            name: self.convert((timeline or {}).get(name), Kind.TIME, f"{where}: {name}", None)
            for name in SPRINT_TIMELINE
        }
        scope = raw.get("scope")
        if scope is not None and not isinstance(scope, dict):
            self.problem(f"{where}: scope", f"must be a mapping, found {describe(scope)}")
            scope = None
        for part in ("planned", "stretch"):
            keys = self.key_list((scope or {}).get(part), f"{where}: scope: {part}")
            plan.sprint_scope[part] = [
                k for k in keys if self.task_ref(k, f"{where}: scope: {part}") is not None
            ]
        plan.sprint = Sprint(
            sprint_id=sprint_id or "",
            status=status or "IN_PROGRESS",
            metrics=jsonable(raw.get("metrics")),
            retrospective=jsonable(raw.get("retrospective")),
            **times,
        )
        self.clean(plan.sprint, where, ("project", "goal"), {"sprint_id": "id"})

    def breaker(self, raw: dict | None, plan: ImportPlan) -> None:
        where = f"{STATE_FILE}: circuit_breaker"
        raw = raw or {}
        plan.breaker = CircuitBreaker(
            status=self.text(raw.get("status"), f"{where}: status") or CircuitBreaker.Status.OK,
            last_check=self.convert(raw.get("last_check"), Kind.TIME, f"{where}: last_check", None),
            current_trigger=jsonable(raw.get("current_trigger")),
        )
        self.clean(plan.breaker, where, ("project",))
        history = raw.get("history")
        if history is not None and not isinstance(history, list):
            self.problem(f"{where}: history", f"must be a list, found {describe(history)}")
            history = None
        for here, entry in self.mappings(history or [], f"{where}: history"):
            nested = entry.get("details")
            details = jsonable(nested) if isinstance(nested, dict) else {}
            details.update(
                {str(k): jsonable(v) for k, v in entry.items() if k not in BREAKER_CHECK_RESERVED}
            )
            check = CircuitBreakerCheck(
                timestamp=self.convert(
                    entry.get("timestamp"), Kind.TIME_REQUIRED, f"{here}: timestamp", None
                ),
                pattern=self.text(entry.get("pattern"), f"{here}: pattern"),
                result=self.text(entry.get("result"), f"{here}: result"),
                details=details,
            )
            self.clean(check, here, ("project",))
            plan.breaker_checks.append(check)

    def log_events(self, log: list) -> list[PlannedEvent]:
        found = []
        for where, entry in self.mappings(log, f"{LOG_FILE}: entry"):
            data = self.event_data(entry, LOG_RESERVED, where)
            task_ref = self.key(entry.get("task"), f"{where}: task")
            task_key = task_ref if task_ref in self.task_keys else None
            if task_ref is not None and task_key is None:
                # A task the file no longer lists (archived, renamed): kept as written.
                data["task"] = task_ref
            action = self.text(entry.get("action"), f"{where}: action")
            # "One-line detail is mandatory" (seed 002): without one, the action says it.
            detail = self.text(entry.get("detail"), f"{where}: detail") or action or "-"
            if len(detail) > SUMMARY_LENGTH:
                data["detail"] = detail  # the full text; the column keeps a skimmable prefix
                detail = detail[: SUMMARY_LENGTH - 1] + "…"
            event = self.event(entry, "timestamp", action, detail, data, where)
            found.append(PlannedEvent(event, task_key))
        return found

    def history_events(self) -> list[PlannedEvent]:
        found = []
        for task_key, history, task_where in self.histories:
            if history is None:
                continue
            if not isinstance(history, list):
                self.problem(f"{task_where}: history", f"must be a list, found {describe(history)}")
                continue
            for where, entry in self.mappings(history, f"{task_where}: history"):
                data = self.event_data(entry, HISTORY_RESERVED, where)
                action = self.text(entry.get("event"), f"{where}: event")
                detail = history_summary(action, data)
                event = self.event(entry, "time", action, detail, data, where)
                found.append(PlannedEvent(event, task_key))
        return found

    def event_data(self, entry: dict, reserved: frozenset[str], where: str) -> dict[str, Any]:
        nested = entry.get("data")
        data: dict[str, Any] = {}
        if isinstance(nested, dict):
            data.update(jsonable(nested))
        elif nested is not None:
            data["data"] = jsonable(nested)
        data.update({str(k): jsonable(v) for k, v in entry.items() if k not in reserved})
        for name in MARKERS & data.keys():  # ours alone: which file an imported event came from
            del data[name]
            self.problem(where, f"{name} is a reserved key")
        return data

    def event(
        self, entry: dict, time_key: str, action: str, detail: str, data: dict, where: str
    ) -> Event:
        actor_id = self.text(entry.get("agent"), f"{where}: agent")
        event = Event(
            timestamp=self.convert(
                entry.get(time_key), Kind.TIME_REQUIRED, f"{where}: {time_key}", None
            ),
            actor_id=actor_id,
            actor_kind=self.text(entry.get("actor_kind"), f"{where}: actor_kind")
            or derived_actor_kind(actor_id),
            action=action,
            from_status=self.text(entry.get("from"), f"{where}: from"),
            to_status=self.text(entry.get("to"), f"{where}: to"),
            outcome=self.text(entry.get("outcome"), f"{where}: outcome") or Event.Outcome.APPLIED,
            detail=detail,
            data=data,
        )
        names = {"from_status": "from", "to_status": "to", "actor_id": "agent"}
        if time_key == "time":  # a history entry names its action `event`
            names.update(action="event", timestamp="time")
        self.clean(event, where, ("project", "task"), names)
        return event
