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
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Goal, ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.interop.invariants import reference_time, worktree_problem

from .events import (
    merge_events,
)
from .fields import describe, jsonable
from .plan import ImportPlan
from .records import RecordReader
from .schema import (
    AGENT_FIELDS,
    AGENT_KEYS_HANDLED,
    CONFIG_FIELDS,
    GOAL_FIELDS,
    LOG_FILE,
    QUORUM_APPROVED_BY,
    REVIEW_FIELDS,
    SECTION_SHAPES,
    STATE_FILE,
    TASK_FIELDS,
    TASK_KEYS,
    Kind,
)
from .yaml_io import LizaFileError, liza_dir, load_yaml_file


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


class _Reader(RecordReader):
    """Builds an ImportPlan, collecting problems instead of stopping at the first: the plan and
    the task and agent sections here, the record sections and events in `RecordReader`, value
    conversion in `FieldReader`."""

    # -- scalars --------------------------------------------------------------------------------

    # -- rows -----------------------------------------------------------------------------------

    # -- the plan -------------------------------------------------------------------------------

    def plan(self, state: Any, log: Any) -> ImportPlan | None:
        if not isinstance(state, dict):
            self.problem(
                STATE_FILE,
                f"the top level must be a mapping of sections (seed 002), found {describe(state)}",
            )
        if not isinstance(log, list):
            self.problem(
                LOG_FILE,
                f"the top level must be a list of entries (seed 002), found {describe(log)}",
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
            self.problem(f"{STATE_FILE}: version", f"{describe(version)} is not 1 (seed 002)")
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
            self.problem(f"{where}: alignment_history", f"must be a list, found {describe(raw)}")
            return []
        history = []
        for here, entry in self.mappings(raw, f"{where}: alignment_history"):
            when = self.convert(
                entry.get("timestamp"), Kind.TIME_REQUIRED, f"{here}: timestamp", None
            )
            history.append({**jsonable(entry), "timestamp": p.format_timestamp(when)})
        return history

    def tasks(self, raw: list | None, plan: ImportPlan) -> None:
        for position, entry in enumerate(raw or [], start=1):
            where = f"{STATE_FILE}: task #{position}"
            if not isinstance(entry, dict):
                self.problem(where, f"must be a mapping of fields, found {describe(entry)}")
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
            self.problem(where, f"must be a list, found {describe(raw)}")
            return []
        items: list[dict[str, Any]] = []
        for here, entry in self.mappings(raw, where):
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
                self.problem(where, f"must be a mapping of fields, found {describe(entry)}")
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

    # -- events (SPEC §4.1: log.yaml and task history are two views of one table) --------------


REVIEW_EXCLUDE = ("project", "task", "claimed_at")
