"""Importers for the neighbouring systems (SPEC §12, F-23): a codeagent-wrapper `AGENT_STATE.json`
(seed 001) or a Logist `job_manifest.json` (seed 004) becomes a project.

Each file is read by the same bounded reader as state.yaml (JSON is YAML: the same limits,
duplicate keys refused), checked against its origin's schema with errors naming the file and
the key, and turned into a seed 002 state through the tables of docs/liza-files.md; that state
then goes through the one importer (`import_project`, strict), so what is created satisfies
every invariant and `liza_validate` says VALID. An unknown state refuses the whole file.

A Logist job goes back to a `job_manifest.json` (seed 004 §7 defines the format); seed 001
defines no file format, so an AGENT_STATE.json has no way back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task

from .importing import ImportResult, import_project
from .schema import STATE_FILE
from .yaml_io import LizaFileError, load_yaml_file

CODEAGENT = "codeagent"
LOGIST = "logist"
SOURCES = (CODEAGENT, LOGIST)
# The Event.data key of a task's `imported` event that keeps what the foreign file said and
# Liza Board has no field for (the Logist manifest's phase, metrics and history).
SOURCE_KEY = "source"

# -- seed 001: codeagent-wrapper task statuses → Liza (neighbour-seeds.md §2.1) -----------------
# A status whose Liza state needs what the file does not record (a run's lease, a commit to
# review) is imported BLOCKED, with the question that gets it going again.
CODEAGENT_STATES: dict[str, str] = {
    "not_started": p.TaskStatus.UNCLAIMED,
    "in_progress": p.TaskStatus.BLOCKED,  # the run and its lease cannot be carried over
    "pending_review": p.TaskStatus.READY_FOR_REVIEW,  # with a commit, else BLOCKED
    "under_review": p.TaskStatus.READY_FOR_REVIEW,  # the reviews in flight are not carried
    "final_review": p.TaskStatus.READY_FOR_REVIEW,
    "fix_required": p.TaskStatus.REJECTED,  # the orchestration-fixes spec; not in the Go table
    "completed": p.TaskStatus.MERGED,
    "blocked": p.TaskStatus.BLOCKED,
}
CODEAGENT_CRITICALITY: dict[str, str] = {
    "standard": Task.Criticality.STANDARD,
    "complex": Task.Criticality.COMPLEX,
    "security-sensitive": Task.Criticality.SECURITY_SENSITIVE,
    "security_sensitive": Task.Criticality.SECURITY_SENSITIVE,
}
CODEAGENT_DONE_WHEN = "the final report's overall severity is minor or none (seed 001)"

# -- seed 004: Logist job states → Liza (neighbour-seeds.md §2.2) -------------------------------
LOGIST_STATES: dict[str, str] = {
    "DRAFT": p.TaskStatus.DRAFT,
    "PENDING": p.TaskStatus.UNCLAIMED,
    # Transient step phases: the step cannot be resumed here (`--re-execute`: UNCLAIMED).
    "PROVISIONING": p.TaskStatus.BLOCKED,
    "EXECUTING": p.TaskStatus.BLOCKED,
    "RECOVERING": p.TaskStatus.BLOCKED,
    "HARVESTING": p.TaskStatus.BLOCKED,
    "SUCCESS": p.TaskStatus.MERGED,
    # The human gate (F-11): READY_FOR_REVIEW with needs_human_approval, given a commit.
    "APPROVAL_REQUIRED": p.TaskStatus.READY_FOR_REVIEW,
    "INTERVENTION_REQUIRED": p.TaskStatus.BLOCKED,
    "SUSPENDED": p.TaskStatus.UNCLAIMED,  # + the suspension overlay (D5)
    "CANCELED": p.TaskStatus.ABANDONED,
}
# Seed 004 §8 "Deprecated States", migrated as the seed says.
LOGIST_DEPRECATED: dict[str, str] = {
    "RUNNING": "EXECUTING",  # "INTERVENTION_REQUIRED (stuck) or re-execute"
    "PAUSED": "SUSPENDED",
    "REVIEW_REQUIRED": "INTERVENTION_REQUIRED",
    "REVIEWING": "INTERVENTION_REQUIRED",
    "FAILED": "CANCELED",
    # Old docs' resource guardrails (neighbour-seeds.md §1.3).
    "HALTED_COST": "INTERVENTION_REQUIRED",
    "HALTED_TIME": "INTERVENTION_REQUIRED",
    "HALTED_ITERATION": "INTERVENTION_REQUIRED",
}
LOGIST_RUNNING = frozenset({"PROVISIONING", "EXECUTING", "RECOVERING", "HARVESTING"})
# Liza → Logist for the way back; the suspension overlay is SUSPENDED whatever the state.
LOGIST_FROM_LIZA: dict[str, str] = {
    p.TaskStatus.DRAFT: "DRAFT",
    p.TaskStatus.UNCLAIMED: "PENDING",
    p.TaskStatus.CLAIMED: "EXECUTING",
    p.TaskStatus.READY_FOR_REVIEW: "HARVESTING",
    p.TaskStatus.REJECTED: "PENDING",  # Logist reject → PENDING
    p.TaskStatus.APPROVED: "APPROVAL_REQUIRED",
    p.TaskStatus.MERGED: "SUCCESS",
    p.TaskStatus.INTEGRATION_FAILED: "INTERVENTION_REQUIRED",
    p.TaskStatus.BLOCKED: "INTERVENTION_REQUIRED",
    p.TaskStatus.SUPERSEDED: "CANCELED",
    p.TaskStatus.ABANDONED: "CANCELED",
}


@dataclass
class _Source:
    """The foreign document being converted; collects every problem with its place."""

    path: Path
    problems: list[str]

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{self.path}: {where}: {message}")

    def text(self, entry: dict, name: str, where: str, *, required: bool = False) -> str:
        value = entry.get(name)
        if value is None or value == "":
            if required:
                self.problem(f"{where}{name}", "missing")
            return ""
        if not isinstance(value, str):
            self.problem(f"{where}{name}", f"expected text, found {json.dumps(value)[:40]}")
            return ""
        return value

    def items(self, document: dict, name: str) -> list[tuple[str, dict]]:
        value = document.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(name, "must be a list")
            return []
        found = []
        for position, entry in enumerate(value, start=1):
            if isinstance(entry, dict):
                found.append((f"{name} #{position}: ", entry))
            else:
                self.problem(f"{name} #{position}", "must be an object")
        return found


def read_foreign(path: str | Path) -> Any:
    """The parsed file, within the limits of every import (LizaFileError otherwise)."""
    problems: list[str] = []
    document = load_yaml_file(Path(path), problems)
    if problems:
        raise LizaFileError(problems)
    return document


def import_foreign(
    *, source: str, path: str | Path, slug: str, name: str, now: datetime, re_execute: bool
) -> ImportResult:
    """Create project `slug` from a codeagent AGENT_STATE.json or a Logist job_manifest.json."""
    path = Path(path)
    document = read_foreign(path)
    reader = _Source(path, [])
    if not isinstance(document, dict):
        reader.problem("top level", "must be a JSON object")
        raise LizaFileError(reader.problems)
    convert = _codeagent_state if source == CODEAGENT else _logist_state
    state, log = convert(document, reader, now=now, re_execute=re_execute)
    if reader.problems:
        raise LizaFileError(reader.problems)
    try:
        return import_project(slug=slug, name=name, state=state, log=log, lenient=False, now=now)
    except LizaFileError as exc:  # the converted state's problems, named after this file
        prefix = f"{STATE_FILE}: "
        raise LizaFileError(
            [
                f"{path} (as {STATE_FILE}): {m.removeprefix(prefix)}" if m.startswith(prefix) else m
                for m in exc.messages
            ]
        ) from exc


def _project_state(
    *, goal_id: str, description: str, spec_ref: str, started: Any, tasks: list[dict]
) -> dict[str, Any]:
    """A seed 002 state around `tasks`: one goal, one sprint planning them all."""
    return {
        "version": 1,
        "goal": {
            "id": goal_id,
            "description": description,
            "spec_ref": spec_ref,
            "created": started,
            "status": "IN_PROGRESS",
        },
        "tasks": tasks,
        "agents": {},
        "sprint": {
            "id": "sprint-1",
            "goal_ref": goal_id,
            "scope": {"planned": [t["id"] for t in tasks], "stretch": []},
            "timeline": {"started": started},
            "status": "IN_PROGRESS",
        },
        "config": {},
    }


def _imported(key: str, now: datetime, detail: str, data: dict[str, Any]) -> dict[str, Any]:
    """The log entry recording where a task came from (history: its task's view)."""
    return {
        "timestamp": p.format_timestamp(now),
        "agent": "system",
        "action": "imported",
        "task": key,
        "detail": detail,
        **data,
    }


def _blocked(reason: str, question: str) -> dict[str, Any]:
    return {"blocked_reason": reason, "blocked_questions": [question]}


# ---------------------------------------------------------------------------------------------
# seed 001: codeagent-wrapper AGENT_STATE.json
# ---------------------------------------------------------------------------------------------


def _codeagent_state(
    document: dict, src: _Source, *, now: datetime, re_execute: bool
) -> tuple[dict, list]:
    spec_path = src.text(document, "spec_path", "", required=True)
    session = src.text(document, "session_name", "", required=True)
    by_task: dict[str, dict[str, list[dict]]] = {}
    for section in ("blocked_items", "final_reports", "review_findings"):
        for where, item in src.items(document, section):
            key = src.text(item, "task_id", where, required=True)
            by_task.setdefault(key, {}).setdefault(section, []).append(item)
    tasks, log = [], []
    for where, entry in src.items(document, "tasks"):
        key = src.text(entry, "task_id", where, required=True)
        status = entry.get("status")
        if status not in CODEAGENT_STATES:
            src.problem(
                f"{where}status",
                f"{json.dumps(status)} is not a codeagent-wrapper status "
                f"(known: {', '.join(CODEAGENT_STATES)})",
            )
            continue
        completed_at = src.text(entry, "completed_at", where, required=True)
        criticality = entry.get("criticality", "standard")
        if criticality not in CODEAGENT_CRITICALITY:
            src.problem(
                f"{where}criticality",
                f"{json.dumps(criticality)} is not one of: {', '.join(CODEAGENT_CRITICALITY)}",
            )
        task: dict[str, Any] = {
            "id": key,
            "description": src.text(entry, "description", where) or f"{key} of {spec_path}",
            "status": CODEAGENT_STATES[status],
            "priority": 3,
            "criticality": CODEAGENT_CRITICALITY.get(criticality, "standard"),
            "spec_ref": spec_path,
            "done_when": CODEAGENT_DONE_WHEN,
            # The file records when a task last finished a run, not when it was created.
            "created": completed_at,
        }
        dependencies = entry.get("dependencies")
        if dependencies is not None:
            task["depends_on"] = dependencies  # the importer checks the ids
        task.update(_codeagent_fields(status, entry, by_task.get(key, {}), re_execute))
        task["status"] = task.pop("_status", task["status"])
        tasks.append(task)
        log.append(
            _imported(
                key,
                now,
                f"codeagent-wrapper {status} → {task['status']}",
                {"source": {"system": CODEAGENT, "status": status, "session": session}},
            )
        )
    started = min((t["created"] for t in tasks if t["created"]), default=p.format_timestamp(now))
    state = _project_state(
        goal_id=f"goal-{session}" if session else "goal-1",
        description=f"codeagent-wrapper session {session} ({spec_path})",
        spec_ref=spec_path,
        started=started,
        tasks=tasks,
    )
    return state, log


def _codeagent_fields(
    status: str, entry: dict, related: dict[str, list[dict]], re_execute: bool
) -> dict[str, Any]:
    """The fields the mapped state owes, from the task's own record and its related items."""
    commit = entry.get("review_commit") or entry.get("commit")
    if status == "in_progress":
        if re_execute:
            return {"_status": p.TaskStatus.UNCLAIMED}
        return _blocked(
            "imported from codeagent-wrapper while in_progress: the run cannot be carried over",
            "Release it for a new claim (UNCLAIMED), or abandon it?",
        )
    if status in ("pending_review", "under_review", "final_review"):
        if isinstance(commit, str) and commit:
            return {"review_commit": commit}
        return {
            "_status": p.TaskStatus.BLOCKED,
            **_blocked(
                f"imported from codeagent-wrapper in {status}, but the file records no commit "
                "to review",
                "Which commit should be reviewed?",
            ),
        }
    if status == "blocked":
        items = related.get("blocked_items") or [{}]
        reason = items[-1].get("blocking_reason") or entry.get("error") or "blocked"
        question = items[-1].get("required_resolution") or "What resolves the blocker?"
        return _blocked(str(reason), str(question))
    if status == "fix_required":
        reports = related.get("final_reports") or related.get("review_findings") or [{}]
        reason = reports[-1].get("summary") or "fix required by the review (codeagent-wrapper)"
        return {"rejection_reason": str(reason)}
    return {}


# ---------------------------------------------------------------------------------------------
# seed 004: Logist job_manifest.json
# ---------------------------------------------------------------------------------------------


def _logist_state(
    document: dict, src: _Source, *, now: datetime, re_execute: bool
) -> tuple[dict, list]:
    key = src.text(document, "job_id", "", required=True)
    raw_status = document.get("status")
    status = LOGIST_DEPRECATED.get(raw_status, raw_status) if isinstance(raw_status, str) else None
    if status not in LOGIST_STATES:
        known = ", ".join([*LOGIST_STATES, *LOGIST_DEPRECATED])
        src.problem("status", f"{json.dumps(raw_status)} is not a Logist state (known: {known})")
        return {}, []
    history = document.get("history", [])
    if not isinstance(history, list):
        src.problem("history", "must be a list")
    metrics = document.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        src.problem("metrics", "must be an object")
    description = src.text(document, "description", "") or src.text(document, "objective", "")
    created = p.format_timestamp(now)
    task: dict[str, Any] = {
        "id": key,
        "description": description or f"Logist job {key}",
        "status": LOGIST_STATES[status],
        "priority": 3,
        "spec_ref": f"{key}/job_manifest.json",
        "done_when": src.text(document, "acceptance", "") or "the Logist job reaches SUCCESS",
        "created": created,
    }
    if status == "APPROVAL_REQUIRED" or document.get("requires_approval") is True:
        task["needs_human_approval"] = True  # the approval gate (F-11)
    _logist_status(task, document, status, raw_status, history, re_execute=re_execute)
    kept = {k: v for k, v in document.items() if k not in ("job_id", "status", "description")}
    log = [
        _imported(
            key,
            now,
            f"Logist {raw_status} → {task['status']}",
            # As JSON text: the database's JSON type does not keep key order, the way back does.
            {
                "source": {
                    "system": LOGIST,
                    "status": raw_status,
                    "imported_as": task["status"],
                    "manifest": json.dumps(kept),
                }
            },
        )
    ]
    state = _project_state(
        goal_id=f"goal-{key}",
        description=f"Logist job {key}",
        spec_ref=task["spec_ref"],
        started=created,
        tasks=[task],
    )
    return state, log


def _logist_status(
    task: dict[str, Any],
    document: dict,
    status: str,
    raw_status: str,
    history: Any,
    *,
    re_execute: bool,
) -> None:
    """What a Logist state becomes on the imported task: a running step re-executed or blocked,
    the approval gate with its commit, an intervention blocked with its reason, a suspension."""
    commit = document.get("review_commit") or document.get("commit")
    if status in LOGIST_RUNNING:
        if re_execute:
            task["status"] = p.TaskStatus.UNCLAIMED
        else:
            task.update(
                _blocked(
                    f"imported from Logist while {raw_status}: the step cannot be resumed here",
                    "Re-execute it (UNCLAIMED), or cancel it?",
                )
            )
    elif status == "APPROVAL_REQUIRED" and not (isinstance(commit, str) and commit):
        task["status"] = p.TaskStatus.BLOCKED
        task.update(
            _blocked(
                "imported from Logist awaiting approval, but the manifest records no commit",
                "Which commit should be approved?",
            )
        )
    elif status == "APPROVAL_REQUIRED":
        task["review_commit"] = commit
    elif status == "INTERVENTION_REQUIRED":
        reason = _last_summary(history) or f"Logist {raw_status}"
        if raw_status.startswith("HALTED_"):
            reason = f"budget_{raw_status.removeprefix('HALTED_').lower()}"
        task.update(_blocked(reason, "What must change before the job is resubmitted?"))
    elif status == "SUSPENDED":
        task.update(
            {
                "suspended_at": task["created"],
                "suspended_by": "logist",
                "suspended_reason": f"Logist {raw_status} at import",
            }
        )


def _last_summary(history: Any) -> str:
    for entry in reversed(history if isinstance(history, list) else []):
        if isinstance(entry, dict):
            for name in ("summary", "description"):
                if isinstance(entry.get(name), str) and entry[name].strip():
                    return entry[name].strip()[:2000]
    return ""


def logist_manifests(project: Project) -> dict[str, str]:
    """Each task of `project` as a Logist job_manifest.json (seed 004 §7), by job id.

    What the imported manifest held beyond the state (phase, metrics, history) comes back from
    the task's `imported` event. The status is the manifest's own while the task has not moved
    since the import (a deprecated one migrated), else LOGIST_FROM_LIZA, SUSPENDED while
    suspended, APPROVAL_REQUIRED while the human gate is closed.
    """
    manifests = {}
    for task in Task.objects.filter(project=project).order_by("created", "id"):
        imported = (
            Event.objects.filter(project=project, task=task, action="imported")
            .order_by("id")
            .first()
        )
        source = (imported.data or {}).get(SOURCE_KEY, {}) if imported else {}
        kept = json.loads(source["manifest"]) if source.get("system") == LOGIST else {}
        status = "SUSPENDED" if task.suspended_at else LOGIST_FROM_LIZA[task.status]
        if task.needs_human_approval and task.status in (
            p.TaskStatus.READY_FOR_REVIEW,
            p.TaskStatus.APPROVED,
        ):
            status = "APPROVAL_REQUIRED"
        if (
            source.get("system") == LOGIST
            and source.get("status") in LOGIST_STATES
            and source.get("imported_as") == task.status
            and (task.suspended_at is not None) == (source["status"] == "SUSPENDED")
        ):
            status = source["status"]  # untouched since the import: the job's own state
        manifest = {"job_id": task.key, "description": task.description, "status": status}
        manifest.update(kept)
        manifest.setdefault("current_phase", None)
        manifest.setdefault("metrics", {"cumulative_cost": 0, "cumulative_time_seconds": 0})
        manifest.setdefault("history", [])
        manifests[task.key] = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    return manifests
