"""From parsed `state.yaml` / `log.yaml` to unsaved rows (SPEC §8).

`plan_import` converts every section of seed 002's schema into model instances that are not yet
saved, and collects every reason the files cannot be stored at all: wrong shapes, unknown
statuses and enum values, bad timestamps, references to tasks the file does not have,
dependency cycles, ids that are not text, unknown sections, worktrees outside the project.
Those are `LizaFileError`s, whatever `--lenient` says. The gaps the original Liza's own scripts
leave (`gap`: an agent without role, an empty goal description, a lone id for a list) are
problems too, unless `--lenient`, which reads them with a default and a warning each. Breaches
of the protocol's invariants that can be stored (a CLAIMED task without a lease, ...) are not
judged here: that is `boards.interop.validation.validate_state`, and strict mode refuses them.
"""

from __future__ import annotations

import graphlib
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django_fsm import FSMField

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Goal, ProjectConfig, Sprint
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.interop.validation import reference_time, worktree_problem

from .events import (
    MARKERS,
    SUMMARY_LENGTH,
    PlannedEvent,
    derived_actor_kind,
    history_summary,
    merge_events,
)
from .schema import (
    AGENT_FIELDS,
    AGENT_KEYS_HANDLED,
    ANOMALY_FIELDS,
    BREAKER_CHECK_RESERVED,
    DISCOVERY_FIELDS,
    EXTRA_CONFIG_KEYS,
    HANDOFF_FIELDS,
    HISTORY_RESERVED,
    LOG_FILE,
    LOG_RESERVED,
    QUORUM_APPROVED_BY,
    SPEC_CHANGE_FIELDS,
    SPRINT_TIMELINE,
    STATE_FILE,
    TASK_FIELDS,
    TASK_KEYS,
    Kind,
)
from .yaml_io import LizaFileError, liza_dir, load_yaml_file

GOAL_FIELDS: dict[str, Kind] = {
    "description": Kind.TEXT,
    "spec_ref": Kind.TEXT,
    "created": Kind.TIME_REQUIRED,
}
NOTE_FIELDS: dict[str, Kind] = {"timestamp": Kind.TIME_REQUIRED, "message": Kind.TEXT}
REVIEW_FIELDS: dict[str, Kind] = {
    "reviewer": Kind.TEXT,
    "verdict": Kind.TEXT,
    "reason": Kind.TEXT,
    "lease_expires": Kind.TIME,
}
CONFIG_FIELDS: dict[str, Kind] = {
    **{
        key: Kind.INT if isinstance(default, int) else Kind.TEXT
        for key, default in p.CONFIG_DEFAULTS.items()
    },
    **dict.fromkeys(EXTRA_CONFIG_KEYS, Kind.INT),
}
# Seed 002 section → the YAML shape it must have.
SECTION_SHAPES: dict[str, type] = {
    "goal": dict,
    "tasks": list,
    "agents": dict,
    "discovered": list,
    "handoff": dict,
    "human_notes": list,
    "spec_changes": list,
    "anomalies": list,
    "sprint": dict,
    "circuit_breaker": dict,
    "config": dict,
}
PROJECT_WIDE_NOTE = "project"  # seed 002 human_notes `for:` naming no task


def read_liza_dir(path: str | Path, *, lenient: bool = False) -> tuple[dict, list]:
    """Parse `<path>/.liza/{state,log}.yaml` (or `path` itself when it is the `.liza` dir).

    Nothing else there is opened: `alerts.log` and `circuit_breaker_report.md` are written from
    stored rows on export and cannot be mapped back to them (docs/decisions.md "Circuit breaker
    report file").

    Raises LizaFileError listing every problem that makes the files impossible to store
    (`lenient` turns the gaps the original Liza's own scripts leave into warnings).
    """
    directory = liza_dir(path)
    problems: list[str] = []
    state = load_yaml_file(directory / STATE_FILE, problems)
    log = load_yaml_file(directory / LOG_FILE, problems)
    if problems:
        raise LizaFileError(problems)
    try:
        plan_import(state, log, lenient=lenient)
    except LizaFileError as exc:
        raise LizaFileError(with_paths(exc.messages, directory)) from exc
    return state, [] if log is None else log


def with_paths(messages: list[str], directory: Path) -> list[str]:
    """The reader's messages ("state.yaml: task t-1: ...") naming the files by their path."""
    named = []
    for message in messages:
        for name in (STATE_FILE, LOG_FILE):
            if message.startswith(f"{name}: "):
                message = f"{directory / name}{message[len(name) :]}"
                break
        named.append(message)
    return named


# ---------------------------------------------------------------------------------------------
# the plan: unsaved rows, joined by task key
# ---------------------------------------------------------------------------------------------


@dataclass
class ImportPlan:
    reference: datetime  # the file's own "now" (validation.reference_time)
    config: dict[str, Any] = field(default_factory=dict)
    goal: Goal | None = None
    tasks: list[Task] = field(default_factory=list)
    depends_on: dict[str, list[str]] = field(default_factory=dict)
    reviews: dict[str, list[Review]] = field(default_factory=dict)  # open round, by task key
    agents: list[tuple[Agent, str | None]] = field(default_factory=list)
    discoveries: list[Discovery] = field(default_factory=list)
    handoffs: list[tuple[str, Handoff]] = field(default_factory=list)
    notes: list[tuple[str | None, HumanNote, str]] = field(default_factory=list)  # +author
    spec_changes: list[SpecChange] = field(default_factory=list)
    anomalies: list[tuple[str | None, Anomaly]] = field(default_factory=list)
    sprint: Sprint | None = None
    sprint_scope: dict[str, list[str]] = field(default_factory=dict)  # planned / stretch
    breaker: CircuitBreaker | None = None
    breaker_checks: list[CircuitBreakerCheck] = field(default_factory=list)
    events: list[PlannedEvent] = field(default_factory=list)
    # What a lenient import read differently from the file, one line per item.
    warnings: list[str] = field(default_factory=list)


def plan_import(state: Any, log: Any, *, lenient: bool = False) -> ImportPlan:
    """Unsaved rows for `state` and `log`, or LizaFileError naming every problem.

    With `lenient`, the gaps the original Liza's own scripts leave (an agent entry written by a
    claim, without `role`; a goal with no description; ...) are read with a default and listed
    in `plan.warnings`; without it they are problems that say what --lenient would do.
    """
    reader = _Reader(lenient=lenient)
    plan = reader.plan(state, [] if log is None else log)
    if reader.problems:
        raise LizaFileError(reader.problems)
    assert plan is not None
    plan.warnings = reader.warnings
    return plan


# ---------------------------------------------------------------------------------------------
# value conversion
# ---------------------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A YAML value as JSON (timestamps as seed 002 Z strings), for JSONFields."""
    if isinstance(value, datetime):
        return p.format_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # e.g. bytes from a !!binary scalar


def _shape(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return repr(jsonable(value))


class _Reader:
    """Builds an ImportPlan, collecting problems instead of stopping at the first."""

    def __init__(self, *, lenient: bool = False) -> None:
        self.lenient = lenient
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.task_keys: dict[str, int] = {}  # key → position in the tasks list
        self.histories: list[tuple[str, Any, str]] = []  # task key, history, where

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def warn(self, where: str, message: str) -> None:
        """Something read differently from the file that loses nothing protocol-relevant."""
        self.warnings.append(f"{where}: {message}")

    def unknown_keys(self, entry: dict, known: Any, where: str) -> None:
        for name in entry:
            if name not in known:
                self.warn(f"{where}: {name}", "not a key Liza Board keeps; left out")

    def gap(self, where: str, message: str, reading: str) -> bool:
        """Something the original's scripts write that our model has no place for as is.

        Lenient: a warning saying how it is read (True: go ahead). Strict: a problem.
        """
        if self.lenient:
            self.warnings.append(f"{where}: {message}; {reading}")
            return True
        self.problem(where, f"{message} (--lenient: {reading})")
        return False

    # -- scalars --------------------------------------------------------------------------------

    def convert(self, raw: Any, kind: Kind, where: str, default: Any) -> Any:
        if raw is None:
            if kind is Kind.TIME_REQUIRED:
                self.problem(where, "missing (seed 002: an ISO 8601 UTC timestamp)")
            return default
        if kind is Kind.TEXT:
            return self.text(raw, where)
        if kind is Kind.INT:
            if isinstance(raw, bool) or not isinstance(raw, int):
                self.problem(where, f"expected a whole number, found {_shape(raw)}")
                return default
            return raw
        if kind is Kind.BOOL:
            if not isinstance(raw, bool):
                self.problem(where, f"expected true or false, found {_shape(raw)}")
                return default
            return raw
        if kind is Kind.LIST:
            if isinstance(raw, list):
                return jsonable(raw)
            if isinstance(raw, dict) or not self.gap(
                where, f"expected a list, found {_shape(raw)}", "read as a one-item list"
            ):
                return default
            return jsonable([raw])
        if kind is Kind.JSON:
            return jsonable(raw)
        return self.time(raw, where)

    def text(self, raw: Any, where: str) -> str:
        if raw is None:
            return ""
        if isinstance(raw, str):
            return raw
        if isinstance(raw, int | float | date) and not isinstance(raw, bool):
            return str(jsonable(raw))
        self.problem(where, f"expected text, found {_shape(raw)}")
        return ""

    def time(self, raw: Any, where: str) -> datetime | None:
        try:
            return p.parse_timestamp(raw)
        except (ValueError, TypeError, OverflowError):
            self.problem(
                where,
                f"{_shape(raw)} is not an ISO 8601 timestamp (seed 002: YYYY-MM-DDTHH:MM:SSZ)",
            )
            return None

    def key(self, raw: Any, where: str, *, required: bool = False) -> str | None:
        """An id (task, goal, sprint, discovery, agent): text, never coerced from a number
        (`id: 7` and `id: "7"` would become the same task)."""
        if raw is None or raw == "":
            if required:
                self.problem(where, "missing")
            return None
        if not isinstance(raw, str):
            hint = " (write it in quotes)" if isinstance(raw, int | float | date) else ""
            self.problem(where, f"expected an id as text, found {_shape(raw)}{hint}")
            return None
        return raw

    def key_list(self, raw: Any, where: str) -> list[str]:
        """A list of ids (depends_on, sprint scope); a lone id is not silently a list."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            if isinstance(raw, dict) or not self.gap(
                where, f"expected a list of ids, found {_shape(raw)}", "read as a one-item list"
            ):
                return []
            raw = [raw]
        keys = [self.key(item, where) for item in raw]
        return list(dict.fromkeys(k for k in keys if k is not None))

    def task_ref(self, raw: Any, where: str) -> str | None:
        """A task key that must name a task of this file (rows that hold a foreign key)."""
        key = self.key(raw, where)
        if key is not None and key not in self.task_keys:
            self.problem(where, f"names {key}, which is not a task in {STATE_FILE}")
            return None
        return key

    def enum(self, raw: Any, allowed: tuple[str, ...], where: str) -> str | None:
        if isinstance(raw, str) and raw in allowed:
            return raw
        found = "missing" if raw is None else f"{_shape(raw)} is not"
        self.problem(where, f"{found} one of: {', '.join(allowed)}")
        return None

    def section(self, state: dict, name: str) -> Any:
        raw = state.get(name)
        shape = SECTION_SHAPES[name]
        if raw is None or isinstance(raw, shape):
            return raw
        expected = "a mapping" if shape is dict else "a list"
        self.problem(f"{STATE_FILE}: {name}", f"must be {expected}, found {_shape(raw)}")
        return None

    def entries(self, raw: list | None, label: str) -> list[tuple[str, dict]]:
        """(where, entry) for each mapping of a list section; other items are problems."""
        found = []
        for position, entry in enumerate(raw or [], start=1):
            where = f"{STATE_FILE}: {label} #{position}"
            if isinstance(entry, dict):
                found.append((where, entry))
            else:
                self.problem(where, f"must be a mapping of fields, found {_shape(entry)}")
        return found

    # -- rows -----------------------------------------------------------------------------------

    def fields(
        self, entry: dict, table: dict[str, Kind], model: type[models.Model], where: str
    ) -> dict[str, Any]:
        values = {}
        for name, kind in table.items():
            default = model._meta.get_field(name).get_default()
            values[name] = self.convert(entry.get(name), kind, f"{where}: {name}", default)
        return values

    def clean(
        self,
        instance: models.Model,
        where: str,
        exclude: tuple[str, ...],
        names: dict[str, str] | None = None,
    ) -> None:
        """The model's own field rules (lengths, choices, ranges, blank), as problems.

        django-fsm status fields are excluded: they are protected (clean_fields would assign
        them again), checked by `enum`, and set once in the constructor, the one way to restore
        a status.
        """
        fsm = [f.name for f in instance._meta.concrete_fields if isinstance(f, FSMField)]
        try:
            instance.clean_fields(exclude=[*exclude, *fsm])
        except ValidationError as exc:
            for name, errors in exc.error_dict.items():
                model_field = instance._meta.get_field(name)
                label = (names or {}).get(name, name)
                if any(m.startswith(f"{where}: {label}: ") for m in self.problems):
                    continue  # already said better (e.g. a required timestamp)
                for error in errors:
                    self.problem(f"{where}: {label}", _field_message(model_field, error))

    # -- the plan -------------------------------------------------------------------------------

    def plan(self, state: Any, log: Any) -> ImportPlan | None:
        if not isinstance(state, dict):
            self.problem(
                STATE_FILE,
                f"the top level must be a mapping of sections (seed 002), found {_shape(state)}",
            )
        if not isinstance(log, list):
            self.problem(
                LOG_FILE, f"the top level must be a list of entries (seed 002), found {_shape(log)}"
            )
        if self.problems:
            return None
        for name in state:
            if name not in SECTION_SHAPES and name != "version":
                self.problem(
                    f"{STATE_FILE}: {name}",
                    "not a section of seed 002's state.yaml "
                    f"(known: version, {', '.join(SECTION_SHAPES)})",
                )
        version = state.get("version")
        if version is not None and version != 1:
            self.problem(f"{STATE_FILE}: version", f"{_shape(version)} is not 1 (seed 002)")
        plan = ImportPlan(reference=reference_time(state))
        plan.config = self.config(self.section(state, "config"))
        plan.goal = self.goal(self.section(state, "goal"))
        self.tasks(self.section(state, "tasks"), plan)
        self.agents(self.section(state, "agents"), plan)
        plan.discoveries = self.discoveries(self.section(state, "discovered"))
        plan.handoffs = self.handoffs(self.section(state, "handoff"))
        plan.notes = self.notes(self.section(state, "human_notes"))
        plan.spec_changes = self.spec_changes(self.section(state, "spec_changes"))
        plan.anomalies = self.anomalies(self.section(state, "anomalies"))
        self.sprint(self.section(state, "sprint"), plan)
        self.breaker(self.section(state, "circuit_breaker"), plan)
        plan.events = merge_events(self.log_events(log), self.history_events())
        return plan

    def config(self, raw: dict | None) -> dict[str, Any]:
        """Seed 002 `config` (+ lease_grace, archive_after_days); unknown keys are ignored."""
        where = f"{STATE_FILE}: config"
        self.unknown_keys(raw or {}, CONFIG_FIELDS, where)
        values = {
            name: self.convert(raw[name], kind, f"{where}: {name}", None)
            for name, kind in CONFIG_FIELDS.items()
            if raw and raw.get(name) is not None
        }
        if "escalation_webhook" in values:
            values["escalation_webhook"] = values["escalation_webhook"] or ""
        try:
            ProjectConfig(**{k: v for k, v in values.items() if v is not None}).full_clean(
                exclude=["project"]
            )
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                for message in messages:
                    self.problem(f"{where}: {name}", message)
        return {k: v for k, v in values.items() if v is not None}

    def goal(self, raw: dict | None) -> Goal | None:
        if raw is None:
            return None
        where = f"{STATE_FILE}: goal"
        goal_id = self.key(raw.get("id"), f"{where}: id", required=True)
        status = self.enum(raw.get("status"), p.GOAL_STATES, f"{where}: status")
        goal = Goal(
            goal_id=goal_id or "",
            status=status or "IN_PROGRESS",
            alignment_history=self.alignment(raw.get("alignment_history"), where),
            **self.fields(raw, GOAL_FIELDS, Goal, where),
        )
        exclude: tuple[str, ...] = ("project",)
        # liza-init.sh writes the goal it was given, and may be given none.
        if not goal.description.strip() and self.gap(
            f"{where}: description", "empty", "imported with an empty description"
        ):
            exclude = ("project", "description")
        self.clean(goal, where, exclude, {"goal_id": "id"})
        return goal

    def alignment(self, raw: Any, where: str) -> list[dict]:
        """Seed 002 alignment_history: entries kept as given, timestamps as Z strings."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.problem(f"{where}: alignment_history", f"must be a list, found {_shape(raw)}")
            return []
        history = []
        for position, entry in enumerate(raw, start=1):
            here = f"{where}: alignment_history #{position}"
            if not isinstance(entry, dict):
                self.problem(here, f"must be a mapping, found {_shape(entry)}")
                continue
            when = self.convert(
                entry.get("timestamp"), Kind.TIME_REQUIRED, f"{here}: timestamp", None
            )
            history.append({**jsonable(entry), "timestamp": p.format_timestamp(when)})
        return history

    def tasks(self, raw: list | None, plan: ImportPlan) -> None:
        for position, entry in enumerate(raw or [], start=1):
            where = f"{STATE_FILE}: task #{position}"
            if not isinstance(entry, dict):
                self.problem(where, f"must be a mapping of fields, found {_shape(entry)}")
                continue
            key = self.key(entry.get("id"), f"{where}: id", required=True)
            if key is not None:
                where = f"{STATE_FILE}: task {key}"
                if not p.TASK_KEY_RE.match(key):
                    self.problem(
                        f"{where}: id",
                        "not a usable task key (letters, digits, '.', '_', '-'; at most 64)",
                    )
                if key in self.task_keys:
                    self.problem(where, f"duplicate id (also task #{self.task_keys[key]})")
                else:
                    self.task_keys[key] = position
            plan.tasks.append(self.task(entry, key or "", where, plan))
        self.check_dependencies(plan.depends_on)

    def task(self, entry: dict, key: str, where: str, plan: ImportPlan) -> Task:
        status = self.enum(entry.get("status"), p.TASK_STATES, f"{where}: status")
        # approved_by is one id in seed 002, read by `approvers`, not as a list field.
        fields = {name: value for name, value in entry.items() if name != "approved_by"}
        values = self.fields(fields, TASK_FIELDS, Task, where)
        values["approved_by"] = self.approvers(entry, where)
        problem = worktree_problem(values["worktree"])
        if problem:
            self.problem(f"{where}: worktree", problem)
        if isinstance(values["priority"], int) and not 1 <= values["priority"] <= 5:
            self.problem(f"{where}: priority", f"{values['priority']} is not 1 (highest) to 5")
        # Keys the file wrote empty (`worktree: null`, `depends_on: []`) are written back so.
        values["file_empty_keys"] = {
            name: jsonable(value)
            for name, value in entry.items()
            if name in TASK_KEYS and name != "id" and value in (None, "", [], {})
        }
        self.unknown_keys(entry, TASK_KEYS, where)
        task = Task(key=key, status=status or "DRAFT", **values)
        self.clean(task, where, ("project", "goal", "key"))
        plan.depends_on[key] = self.key_list(entry.get("depends_on"), f"{where}: depends_on")
        self.histories.append((key, entry.get("history"), where))
        reviews = self.task_reviews(entry, task, where)
        if reviews:
            plan.reviews[key] = reviews
        return task

    def approvers(self, entry: dict, where: str) -> list[str]:
        """Seed 002 `approved_by` is one reviewer id (the original's merge query compares it
        to a string); a quorum (seed 001) lists every approver in `quorum_approved_by`."""
        raw, quorum = entry.get("approved_by"), entry.get(QUORUM_APPROVED_BY)
        if isinstance(raw, list) and self.gap(
            f"{where}: approved_by",
            "a list (seed 002 names one reviewer)",
            "read as the list of approving reviewers",
        ):
            approvers = self.key_list(raw, f"{where}: approved_by")
        else:
            approver = None if isinstance(raw, list) else self.key(raw, f"{where}: approved_by")
            approvers = [approver] if approver else []
        if quorum is not None:
            listed = self.key_list(quorum, f"{where}: {QUORUM_APPROVED_BY}")
            if approvers and approvers[0] not in listed:
                self.problem(
                    f"{where}: {QUORUM_APPROVED_BY}",
                    f"does not list approved_by ({approvers[0]})",
                )
            approvers = list(dict.fromkeys([*approvers, *listed]))
        return approvers

    def task_reviews(self, entry: dict, task: Task, where: str) -> list[Review]:
        """The open review round: `reviewing_by` / `review_lease_expires` (seed 002 "Code
        Reviewer Lease Fields"), or our `review_round` when the round holds more than one
        review or verdicts already given (seed 001 criticality needs 2 approvals)."""
        reviewer = self.text(entry.get("reviewing_by"), f"{where}: reviewing_by")
        lease = self.convert(
            entry.get("review_lease_expires"), Kind.TIME, f"{where}: review_lease_expires", None
        )
        round_ = entry.get("review_round")
        if round_ is not None:
            items = self.review_round(round_, f"{where}: review_round")
        elif reviewer:
            items = [{"reviewer": reviewer, "verdict": "", "reason": "", "lease_expires": lease}]
        else:
            items = []
        # Seed 002: the review lease exists in READY_FOR_REVIEW only; elsewhere it is ignored.
        if task.status != p.TaskStatus.READY_FOR_REVIEW:
            return []
        reviews = []
        for values in items:
            review = Review(review_commit=task.review_commit, **values)
            self.clean(review, f"{where}: review by {values['reviewer']}", REVIEW_EXCLUDE)
            reviews.append(review)
        return reviews

    def review_round(self, raw: Any, where: str) -> list[dict[str, Any]]:
        if not isinstance(raw, list):
            self.problem(where, f"must be a list, found {_shape(raw)}")
            return []
        items: list[dict[str, Any]] = []
        for position, entry in enumerate(raw, start=1):
            here = f"{where} #{position}"
            if not isinstance(entry, dict):
                self.problem(here, f"must be a mapping, found {_shape(entry)}")
                continue
            values = self.fields(entry, REVIEW_FIELDS, Review, here)
            if not values["reviewer"]:
                self.problem(f"{here}: reviewer", "missing")
            elif any(item["reviewer"] == values["reviewer"] for item in items):
                self.problem(here, f"{values['reviewer']} appears twice in one round")
            items.append(values)
        return items

    def check_dependencies(self, depends_on: dict[str, list[str]]) -> None:
        """Seed 002 "depends_on must reference existing task IDs ... not create circular
        dependencies": a foreign key cannot point nowhere, and a cycle can never be claimed."""
        graph: dict[str, list[str]] = {}
        for key, deps in depends_on.items():
            for dep in deps:
                if dep not in self.task_keys:
                    self.problem(
                        f"{STATE_FILE}: task {key}: depends_on",
                        f"names {dep}, which is not a task in {STATE_FILE}",
                    )
            graph[key] = [dep for dep in deps if dep in self.task_keys]
        try:
            graphlib.TopologicalSorter(graph).prepare()
        except graphlib.CycleError as exc:
            # graphlib lists each node before the node that depends on it; reversed, each
            # task depends on the next.
            cycle = list(reversed(exc.args[1]))[:-1]
            start = min(range(len(cycle)), key=lambda i: self.task_keys.get(cycle[i], 0))
            cycle = cycle[start:] + cycle[:start]
            path = " → ".join([*cycle, cycle[0]])
            self.problem(f"{STATE_FILE}: tasks", f"depends_on cycle: {path}")

    def agents(self, raw: dict | None, plan: ImportPlan) -> None:
        holders: dict[str, list[str]] = defaultdict(list)
        for raw_id, entry in (raw or {}).items():
            agent_id = self.key(raw_id, f"{STATE_FILE}: agents: {raw_id!r}") or str(raw_id)
            where = f"{STATE_FILE}: agent {agent_id}"
            if not isinstance(entry, dict):
                self.problem(where, f"must be a mapping of fields, found {_shape(entry)}")
                continue
            status = self.enum(entry.get("status"), p.AGENT_STATES, f"{where}: status")
            values = self.fields(entry, AGENT_FIELDS, Agent, where)
            values["role"] = self.role(values["role"], agent_id, where)
            self.unknown_keys(entry, AGENT_FIELDS.keys() | AGENT_KEYS_HANDLED, where)
            agent = Agent(agent_id=agent_id, status=status or "STARTING", **values)
            self.clean(agent, where, ("project", "current_task"), {"agent_id": "id"})
            # Seed 002 spells the planner's task `task`, the others' `current_task`.
            raw_task = entry.get("current_task")
            if raw_task is None:
                raw_task = entry.get("task")
            here = f"{where}: current_task"
            if (
                isinstance(raw_task, str)
                and raw_task
                and raw_task not in self.task_keys
                and self.gap(
                    here,
                    f"names {raw_task}, which is not a task in {STATE_FILE}",
                    "the agent is imported holding no task",
                )
            ):
                raw_task = None
            task_key = self.task_ref(raw_task, here)
            if task_key is not None:
                holders[task_key].append(agent_id)
            plan.agents.append((agent, task_key))
        for task_key, agent_ids in holders.items():
            if len(agent_ids) > 1:
                self.problem(
                    f"{STATE_FILE}: task {task_key}",
                    f"is the current task of {', '.join(agent_ids)}; "
                    "only one agent can hold a task (seed 002)",
                )

    def role(self, role: str, agent_id: str, where: str) -> str:
        """The agent's role in our spelling. liza-agent.sh stores `code-reviewer` where the
        spec says `code_reviewer`; a claim on an agent the file no longer lists writes an entry
        with no role at all (original-liza.md §2.1, T4), which the id still tells."""
        if role == "code-reviewer":
            return Agent.Role.CODE_REVIEWER
        match = p.AGENT_ID_RE.match(agent_id)
        if not role and match:
            derived = next(r for r, prefix in p.AGENT_ID_PREFIX.items() if prefix == match[1])
            if self.gap(f"{where}: role", "missing", f"read as {derived}, from the agent id"):
                return derived
        return role

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
                self.problem(where, f"must be a mapping of fields, found {_shape(entry)}")
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
            self.problem(f"{where}: timeline", f"must be a mapping, found {_shape(timeline)}")
            timeline = None
        times = {
            name: self.convert((timeline or {}).get(name), Kind.TIME, f"{where}: {name}", None)
            for name in SPRINT_TIMELINE
        }
        scope = raw.get("scope")
        if scope is not None and not isinstance(scope, dict):
            self.problem(f"{where}: scope", f"must be a mapping, found {_shape(scope)}")
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
            self.problem(f"{where}: history", f"must be a list, found {_shape(history)}")
            history = None
        for position, entry in enumerate(history or [], start=1):
            here = f"{where}: history #{position}"
            if not isinstance(entry, dict):
                self.problem(here, f"must be a mapping, found {_shape(entry)}")
                continue
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

    # -- events (SPEC §4.1: log.yaml and task history are two views of one table) --------------

    def log_events(self, log: list) -> list[PlannedEvent]:
        found = []
        for position, entry in enumerate(log, start=1):
            where = f"{LOG_FILE}: entry #{position}"
            if not isinstance(entry, dict):
                self.problem(where, f"must be a mapping, found {_shape(entry)}")
                continue
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
                self.problem(f"{task_where}: history", f"must be a list, found {_shape(history)}")
                continue
            for position, entry in enumerate(history, start=1):
                where = f"{task_where}: history #{position}"
                if not isinstance(entry, dict):
                    self.problem(where, f"must be a mapping, found {_shape(entry)}")
                    continue
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


REVIEW_EXCLUDE = ("project", "task", "claimed_at")


def _field_message(model_field: models.Field, error: ValidationError) -> str:
    if error.code == "invalid_choice":
        allowed = ", ".join(str(value) for value, _ in model_field.choices)
        return f"{_shape(error.params['value'])} is not one of: {allowed}"
    if error.code in ("blank", "null"):
        return "missing"
    return " ".join(error.messages)
