"""`liza_export`: a project written back as seed 002's `state.yaml` and `log.yaml` (SPEC §8).

Values are plain Python (timestamps as UTC datetimes to the second), so the same dicts feed
`validate_state` and `dump_yaml`. Optional task fields are left out when empty, so a file looks
like the seed's; whatever is written is read back to the same rows, which keeps
export → import → export byte-stable.

The original Liza reads what we write (SPEC §13): every field keeps the original's type
(`approved_by` is one reviewer id), history and log.yaml keep append order and hold only what
was recorded, and a state the original validator would reject is refused, never written.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from boards.coordination.models.projects import Project
from boards.coordination.models.records import (
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Task
from boards.coordination.selectors.breaker import REPORT_FILE
from boards.interop.entries import (
    _agents,
    _anomalies,
    _anomaly,
    _breaker,
    _config,
    _discovery,
    _goal,
    _handoffs,
    _log_entry,
    _note,
    _notes,
    _spec_change,
    _sprint,
    _task,
    _tasks_in_order,
)
from boards.interop.invariants import NOT_YET_EXPORTABLE, Violation
from boards.interop.side_files import export_alerts_log, export_breaker_report
from boards.interop.validation import validate_state

from .events import in_log
from .schema import (
    ALERTS_FILE,
    LIZA_DIR,
    LOG_FILE,
    STATE_FILE,
)
from .yaml_io import dump_yaml, write_files


def export_state(project: Project) -> dict[str, Any]:
    """Seed 002's state.yaml for `project`, sections in the seed's order."""
    tasks = _tasks_in_order(project)
    order = {task.pk: position for position, task in enumerate(tasks)}
    return {
        "version": 1,
        "goal": _goal(project),
        "tasks": [_task(task) for task in tasks],
        "agents": _agents(project),
        "discovered": [_discovery(d) for d in Discovery.objects.filter(project=project)],
        "handoff": _handoffs(project, order),
        "human_notes": [_note(n) for n in _notes(project)],
        "spec_changes": [_spec_change(c) for c in SpecChange.objects.filter(project=project)],
        "anomalies": [_anomaly(a) for a in _anomalies(project)],
        "sprint": _sprint(project),
        "circuit_breaker": _breaker(project),
        "config": _config(project),
    }


def export_log(project: Project) -> list[dict[str, Any]]:
    """Seed 002's log.yaml: the project's events in the order they were appended (SPEC §4.1),
    except those an imported file had in a task's history only."""
    keys = set(Task.objects.filter(project=project).values_list("key", flat=True))
    events = Event.objects.filter(project=project).select_related("task").order_by("id")
    return [_log_entry(event, keys) for event in events if in_log(event)]


class LizaExportRefused(Exception):
    """The project cannot be written for the original Liza yet; `reasons` says why."""

    def __init__(self, reasons: list[str], *, not_yet: bool) -> None:
        self.reasons = list(reasons)
        self.not_yet = not_yet  # only a goal or sprint is missing: a young project, not a fault
        super().__init__("\n".join(self.reasons))


def export_refusals(state: dict[str, Any]) -> tuple[list[str], list[Violation]]:
    """What stops `state` from being written: (missing goal/sprint, violations the original
    validator would also report). Both empty: exportable."""
    missing = [why for section, why in NOT_YET_EXPORTABLE.items() if state.get(section) is None]
    violations = [
        v
        for v in validate_state(state)
        if (v.original or v.rule in EXPORT_ALSO_REFUSED)
        and not (v.rule == "required_fields" and missing)
    ]
    return missing, violations


# Ours, but an export breaking it would be hostile to whoever reads it: a worktree outside the
# project is a path the original's scripts would create or delete (`rm -rf` of a worktree).
EXPORT_ALSO_REFUSED = frozenset({"worktree_inside_project"})


def project_violations(
    project: Project, *, now: datetime | None = None
) -> tuple[list[Violation], list[str]]:
    """The invariants `project` breaks, judged on its export at `now`, and why it is not
    exportable yet: a live project with no goal or sprint yet is young, not broken."""
    state = export_state(project)
    missing, _ = export_refusals(state)
    young = {f"{section} is missing" for section in NOT_YET_EXPORTABLE} if missing else set()
    violations = [
        v
        for v in validate_state(state, now=now)
        if not (v.rule == "required_fields" and v.detail in young)
    ]
    return violations, missing


def write_liza_dir(project: Project, path: str | Path) -> list[Path]:
    """Write `<path>/.liza/state.yaml`, `log.yaml`, `alerts.log` and, while the circuit breaker
    is tripped with a stored report, `circuit_breaker_report.md` (`path` may be the `.liza` dir
    itself).

    LizaExportRefused, with nothing written, when the original Liza would reject the state.
    """
    state = export_state(project)
    missing, violations = export_refusals(state)
    if missing or violations:
        reasons = [
            *(
                f"not exportable yet: {why} (the original Liza needs a goal and a sprint)"
                for why in missing
            ),
            *(
                f"INVALID for the original Liza: {v}" if v.original else f"INVALID: {v}"
                for v in violations
            ),
        ]
        raise LizaExportRefused(reasons, not_yet=not violations)
    path = Path(path)
    directory = path if path.name == LIZA_DIR else path / LIZA_DIR
    texts = {
        STATE_FILE: dump_yaml(state),
        LOG_FILE: dump_yaml(export_log(project)),
        ALERTS_FILE: export_alerts_log(project),
    }
    report = export_breaker_report(project)
    if report is not None:
        texts[REPORT_FILE] = report
    return write_files(directory, texts)
