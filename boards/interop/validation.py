"""The one validator of a Liza blackboard: every invariant of seeds 000 and 002 "Validation Rules".

`validate_state` is a pure function over a state dict shaped like seed 002's `state.yaml` after
`yaml.safe_load` (timestamps may be `datetime` objects or ISO strings). It imports no Django
models: `liza_validate` runs it on files as well as on exported projects, and the services may
run it on the state they are about to commit (SPEC §5.1, §8).

Malformed input never raises: a section or entry of the wrong shape is itself a violation, and
the rules that cannot be judged on it are skipped.

Every check of the original `liza-validate.sh` v0.1.1 is here (ORIGINAL_RULES names them; an
export breaking one of them is refused, SPEC §13), plus rules the original lacks. The rules'
wording and the readers are `invariants.py`, the task and agent checks `task_checks.py`; the
other sections' checks and the entry point are here.

Not checked, on purpose:
- "CLAIMED task worktree path must exist" (seed 002): paths live on agent machines (SPEC §5.1);
  a worktree must however be a relative path that stays inside the project.
- The original's spec_ref file check: the spec files are not part of the blackboard.
- The "Transition invariants" of seed 002: the seed itself says they need history analysis and
  are enforced at runtime, by the services here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boards.interop.invariants import (
    _REQUIRED_TOP_LEVEL,
    _RULE_ORDER,
    Violation,
    _as_list,
    _entries,
    _key,
    _misshapen,
    _present,
    _status,
    _violation,
    reference_time,
)
from boards.interop.task_checks import _check_agents, _check_tasks, _read_tasks, _Tasks
from boards.protocol import (
    ANOMALY_REQUIRED_FIELDS,
    GOAL_STATES,
    SPRINT_STATES,
    parse_timestamp,
)


def _check_top_level(state: Mapping[str, Any]) -> list[Violation]:
    # An empty `tasks: []` or `agents: {}` is a legitimate new project: only absence counts,
    # and `false`, which the original's `yq -e` also takes for absence.
    return [
        _violation("required_fields", "state", f"{name} is missing")
        for name in _REQUIRED_TOP_LEVEL
        if state.get(name) is None or state.get(name) is False
    ]


def _check_goal(raw: Any) -> list[Violation]:
    if not isinstance(raw, Mapping):  # absent: required_fields reports it
        return _misshapen(raw, "goal", Mapping)
    if _status(raw, GOAL_STATES) is None:
        return [_violation("goal_status_valid", "goal", f"status {raw.get('status')!r}")]
    return []


def _check_anomaly(subject: str, anomaly: Mapping[str, Any]) -> list[Violation]:
    kind = anomaly.get("type")
    if not (isinstance(kind, str) and kind in ANOMALY_REQUIRED_FIELDS):
        return [_violation("anomaly_type", subject, f"type {kind!r}")]
    details = anomaly.get("details")
    if not isinstance(details, Mapping):
        details = {}
    missing = [name for name in ANOMALY_REQUIRED_FIELDS[kind] if not _present(details.get(name))]
    if missing:
        detail = f"{kind} details missing: {', '.join(missing)}"
        return [_violation("anomaly_details", subject, detail)]
    return []


def _check_anomalies(raw: Any) -> list[Violation]:
    if not isinstance(raw, list):  # absent: an optional section
        return _misshapen(raw, "anomalies", list)
    anomalies, found = _entries((f"anomaly #{n}", entry) for n, entry in enumerate(raw, start=1))
    for subject, anomaly in anomalies:
        found += _check_anomaly(subject, anomaly)
    return found


def _check_sprint(raw: Any, index: _Tasks, goal: Any) -> list[Violation]:
    if not isinstance(raw, Mapping):  # absent: required_fields reports it
        return _misshapen(raw, "sprint", Mapping)
    found: list[Violation] = []
    if _status(raw, SPRINT_STATES) is None:
        found.append(_violation("sprint_status_valid", "sprint", f"status {raw.get('status')!r}"))
    scope = raw.get("scope")
    found += _misshapen(scope, "sprint.scope", Mapping)
    if isinstance(scope, Mapping) and index.readable:
        unknown = [
            f"{part}: {_key(ref) or repr(ref)}"
            for part in ("planned", "stretch")
            for ref in _as_list(scope.get(part))
            if _key(ref) not in index.by_id
        ]
        if unknown:
            found.append(_violation("sprint_scope_exists", "sprint", "; ".join(unknown)))
    goal_ref = raw.get("goal_ref")
    goal_id = goal.get("id") if isinstance(goal, Mapping) else None
    if _present(goal_ref) and goal_ref != goal_id:
        detail = f"goal_ref {goal_ref!r}, goal.id {goal_id!r}"
        found.append(_violation("sprint_goal_ref", "sprint", detail))
    timeline = raw.get("timeline")
    if not (isinstance(timeline, Mapping) and _present(timeline.get("started"))):
        found.append(_violation("sprint_started", "sprint", "timeline.started is missing"))
    return found


def _check_handoffs(raw: Any) -> list[Violation]:
    if not isinstance(raw, Mapping):  # absent: an optional section
        return _misshapen(raw, "handoff", Mapping)
    handoffs, found = _entries((f"handoff {task}", entry) for task, entry in raw.items())
    for subject, entry in handoffs:
        missing = [name for name in ("summary", "next_action") if not _present(entry.get(name))]
        if missing:
            found.append(_violation("handoff_fields", subject, f"missing: {', '.join(missing)}"))
    return found


def _check_discoveries(raw: Any) -> list[Violation]:
    if not isinstance(raw, list):  # absent: an optional section
        return _misshapen(raw, "discovered", list)
    discoveries, found = _entries((f"discovery #{n}", entry) for n, entry in enumerate(raw, 1))
    for subject, entry in discoveries:
        urgency = entry.get("urgency")
        if urgency is not None and urgency not in ("deferred", "immediate"):
            subject = _key(entry.get("id")) or subject
            found.append(_violation("discovery_urgency", subject, f"urgency {urgency!r}"))
    return found


def _check_config(raw: Any) -> list[Violation]:
    return _misshapen(raw, "config", Mapping)  # absence is reported by required_fields


def validate_state(state: Mapping[str, Any], *, now: datetime | None = None) -> list[Violation]:
    """Every violation of the seeds' invariants in `state`; an empty list means VALID.

    Time-relative rules are judged at `now`, by default `reference_time(state)`. Violations come
    section by section in state.yaml order, then by rule (INVARIANTS order), then file order.
    """
    if not isinstance(state, Mapping):
        detail = f"state is {type(state).__name__}, not a mapping"
        return [_violation("section_shape", "state", detail)]
    moment = reference_time(state) if now is None else parse_timestamp(now)
    index = _read_tasks(state.get("tasks"))
    sections = (
        _check_top_level(state),
        _check_goal(state.get("goal")),
        _check_tasks(index, moment),
        _check_agents(state.get("agents"), index, moment),
        _check_discoveries(state.get("discovered")),
        _check_handoffs(state.get("handoff")),
        _check_anomalies(state.get("anomalies")),
        _check_sprint(state.get("sprint"), index, state.get("goal")),
        _check_config(state.get("config")),
    )
    # sorted() is stable: within a rule, the order of the file is kept.
    return [
        violation
        for section in sections
        for violation in sorted(section, key=lambda v: _RULE_ORDER[v.rule])
    ]
