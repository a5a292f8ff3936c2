"""The validator against every invariant of seeds 000 and 002 "Validation Rules".

Pure functions over dicts: no database, no Django models. Runs with and without pytest-django.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from boards.interop.invariants import INVARIANTS, Violation, reference_time
from boards.interop.validation import validate_state
from boards.protocol import ANOMALY_REQUIRED_FIELDS, LEASE_GRACE_SECONDS, MAX_BLOCKED_QUESTIONS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The seed fixtures are shared by every engineer; LIZA_SEED_FIXTURES points elsewhere if moved.
FIXTURES = Path(os.environ.get("LIZA_SEED_FIXTURES", PROJECT_ROOT.parent / "shared" / "fixtures"))

NOW = datetime(2025, 1, 17, 15, 0, 0, tzinfo=UTC)
GRACE = timedelta(seconds=LEASE_GRACE_SECONDS)

# A small state that satisfies every invariant, judged at NOW (its latest heartbeat).
BASE: dict[str, Any] = {
    "version": 1,
    "goal": {"id": "goal-1", "description": "Retry logic", "status": "IN_PROGRESS"},
    "tasks": [
        {
            "id": "task-1",
            "status": "MERGED",
            "spec_ref": "specs/retry.md",
            "done_when": "get_user retries 3x",
            "worktree": None,
        },
        {
            "id": "task-2",
            "status": "CLAIMED",
            "assigned_to": "coder-1",
            "worktree": ".worktrees/task-2",
            "base_commit": "a1b2c3d4",
            "lease_expires": "2025-01-17T15:05:00Z",
            "depends_on": ["task-1"],
            "spec_ref": "specs/retry.md#orders",
            "done_when": "create_order retries after idempotency check",
        },
        {"id": "task-3", "status": "DRAFT", "spec_ref": "specs/retry.md#payments"},
    ],
    "agents": {
        "coder-1": {
            "role": "coder",
            "status": "WORKING",
            "current_task": "task-2",
            "lease_expires": "2025-01-17T15:05:00Z",
            "heartbeat": "2025-01-17T15:00:00Z",
        },
        "code-reviewer-1": {
            "role": "code_reviewer",
            "status": "IDLE",
            "current_task": None,
            "heartbeat": "2025-01-17T14:59:00Z",
        },
        "planner-1": {
            "role": "planner",
            "status": "IDLE",
            "task": None,
            "heartbeat": "2025-01-17T14:58:00Z",
        },
    },
    "anomalies": [
        {
            "task": "task-2",
            "reporter": "coder-1",
            "type": "retry_loop",
            "details": {"count": 3, "error_pattern": "serialization failure"},
        }
    ],
    "sprint": {
        "id": "sprint-1",
        "goal_ref": "goal-1",
        "status": "IN_PROGRESS",
        "scope": {"planned": ["task-1", "task-2"], "stretch": []},
        "timeline": {"started": "2025-01-17T14:00:00Z"},
    },
    "config": {"lease_duration": 300},
}

DELETE = object()


def _step(node: Any, key: Any) -> Any:
    """Go one step down; in a list, a string key is the `id` of the element."""
    if isinstance(node, list) and isinstance(key, str):
        return next(item for item in node if isinstance(item, Mapping) and item.get("id") == key)
    return node[key]


def _assign(node: Any, key: Any, value: Any) -> None:
    if isinstance(node, list):
        if isinstance(key, str):
            matches = [i for i, item in enumerate(node) if item.get("id") == key]
            index = matches[0] if matches else len(node)
        else:
            index = key
        if value is DELETE:
            del node[index]
        elif index == len(node):
            node.append(value)
        else:
            node[index] = value
    elif value is DELETE:
        node.pop(key, None)
    else:
        node[key] = value


def patched(changes: Mapping[tuple[Any, ...], Any] | None = None) -> dict[str, Any]:
    """A deep copy of BASE with `changes` applied: path → value (DELETE removes the key).

    In a list a string step is a task id, so ("tasks", "task-2", "worktree") edits task-2; a
    path ending on an unknown id (or on the list's length) appends the value.
    """
    state = copy.deepcopy(BASE)
    for path, value in (changes or {}).items():
        node: Any = state
        for key in path[:-1]:
            node = _step(node, key)
        _assign(node, path[-1], value)
    return state


def rules(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.rule, v.subject) for v in violations]


def test_base_state_is_valid() -> None:
    assert validate_state(patched(), now=NOW) == []
    assert reference_time(patched()) == NOW


# --- one breaking and one satisfying state per rule -------------------------------------------


@dataclass(frozen=True)
class Case:
    rule: str
    subject: str
    breaks: Mapping[tuple[Any, ...], Any]
    satisfies: Mapping[tuple[Any, ...], Any]


REJECTED_TASK_3 = {
    ("tasks", "task-3", "status"): "REJECTED",
    ("tasks", "task-3", "rejection_reason"): "No tests",
    ("tasks", "task-3", "done_when"): "charge() retries",
}
BLOCKED_TASK_2 = {
    ("tasks", "task-2", "status"): "BLOCKED",
    ("tasks", "task-2", "blocked_reason"): "Spec silent on partial failures",
}
MERGED_TASK_4 = {"id": "task-4", "status": "MERGED", "spec_ref": "s.md", "done_when": "done"}

CASES: list[Case] = [
    Case("required_fields", "state", {("config",): DELETE}, {("config",): {}}),
    Case("section_shape", "agents", {("agents",): ["coder-1"]}, {("anomalies",): []}),
    Case(
        "entry_shape",
        "anomaly #1",
        {("anomalies", 0): "retry_loop"},
        {("anomalies", 1): {"type": "spec_gap", "details": {}}},
    ),
    Case(
        "goal_status_valid",
        "goal",
        {("goal", "status"): "CHECKPOINT"},
        {("goal", "status"): "COMPLETED"},
    ),
    Case(
        "task_id_missing",
        "task #3",
        {("tasks", "task-3", "id"): None},
        {("tasks", "task-3", "id"): 3},
    ),
    Case(
        "task_id_unique",
        "task-1",
        {("tasks", "task-4"): {**MERGED_TASK_4, "id": "task-1"}},
        {("tasks", "task-4"): MERGED_TASK_4},
    ),
    Case(
        "task_status_valid",
        "task-3",
        {("tasks", "task-3", "status"): "draft"},
        {("tasks", "task-3", "status"): "ABANDONED"},
    ),
    Case(
        "draft_no_assignee",
        "task-3",
        {("tasks", "task-3", "assigned_to"): "coder-2"},
        {("tasks", "task-3", "assigned_to"): None},
    ),
    Case(
        "done_when_required",
        "task-1",
        {("tasks", "task-1", "done_when"): ""},
        {("tasks", "task-3", "status"): "ABANDONED"},
    ),
    Case(
        "spec_ref_required",
        "task-2",
        {("tasks", "task-2", "spec_ref"): None},
        {
            ("tasks", "task-4"): {
                "id": "task-4",
                "status": "SUPERSEDED",
                "superseded_by": ["task-2"],
                "rescope_reason": "Too broad",
            }
        },
    ),
    Case(
        "claimed_assigned_to",
        "task-2",
        {("tasks", "task-2", "assigned_to"): DELETE},
        {("tasks", "task-2", "assigned_to"): "coder-2"},
    ),
    Case(
        "claimed_worktree",
        "task-2",
        {("tasks", "task-2", "worktree"): ""},
        # Existence of the path is not judged: it lives on an agent's machine (SPEC §5.1).
        {("tasks", "task-2", "worktree"): "nonexistent/worktrees/task-2"},
    ),
    Case(
        "claimed_lease_missing",
        "task-2",
        {("tasks", "task-2", "lease_expires"): DELETE},
        {("tasks", "task-2", "lease_expires"): "2025-01-17T14:59:30Z"},
    ),
    Case(
        "claimed_lease_expires",
        "task-2",
        {("tasks", "task-2", "lease_expires"): "2025-01-17T14:58:59Z"},
        {("tasks", "task-2", "lease_expires"): "2025-01-17T14:59:00Z"},
    ),
    Case(
        "claimed_base_commit",
        "task-2",
        {("tasks", "task-2", "base_commit"): DELETE},
        {
            ("tasks", "task-2", "base_commit"): DELETE,
            ("tasks", "task-2", "integration_fix"): True,
            ("tasks", "task-2", "history"): [{"event": "integration_failed"}],
        },
    ),
    Case(
        "ready_for_review_commit",
        "task-2",
        {("tasks", "task-2", "status"): "READY_FOR_REVIEW"},
        {
            ("tasks", "task-2", "status"): "READY_FOR_REVIEW",
            ("tasks", "task-2", "review_commit"): "c3d4e5f6",
        },
    ),
    Case(
        "rejected_reason",
        "task-2",
        {("tasks", "task-2", "status"): "REJECTED"},
        {
            ("tasks", "task-2", "status"): "REJECTED",
            ("tasks", "task-2", "rejection_reason"): "Retry must not apply to POST",
        },
    ),
    Case(
        "blocked_diagnosis",
        "task-2",
        {**BLOCKED_TASK_2, ("tasks", "task-2", "blocked_questions"): []},
        {**BLOCKED_TASK_2, ("tasks", "task-2", "blocked_questions"): ["Return partial pages?"]},
    ),
    Case(
        "blocked_questions_max",
        "task-2",
        {**BLOCKED_TASK_2, ("tasks", "task-2", "blocked_questions"): ["a?", "b?", "c?", "d?"]},
        {**BLOCKED_TASK_2, ("tasks", "task-2", "blocked_questions"): ["a?", "b?", "c?"]},
    ),
    Case(
        "superseded_fields",
        "task-1",
        {
            ("tasks", "task-1", "status"): "SUPERSEDED",
            ("tasks", "task-1", "superseded_by"): [],
            ("tasks", "task-1", "rescope_reason"): "Wrong granularity",
        },
        {
            ("tasks", "task-1", "status"): "SUPERSEDED",
            ("tasks", "task-1", "superseded_by"): ["task-3"],
            ("tasks", "task-1", "rescope_reason"): "Wrong granularity",
            ("tasks", "task-2", "depends_on"): [],
        },
    ),
    Case(
        "merged_no_worktree",
        "task-1",
        {("tasks", "task-1", "worktree"): ".worktrees/task-1"},
        {("tasks", "task-1", "worktree"): DELETE},
    ),
    Case(
        "worktree_inside_project",
        "task-2",
        {("tasks", "task-2", "worktree"): "../../../../etc"},
        {("tasks", "task-2", "worktree"): "worktrees/task-2..b"},
    ),
    Case(
        "depends_on_exists",
        "task-2",
        {("tasks", "task-2", "depends_on"): ["task-1", "task-9"]},
        {("tasks", "task-2", "depends_on"): []},
    ),
    Case(
        "depends_on_acyclic",
        "task-1",
        {
            ("tasks", "task-1", "depends_on"): ["task-3"],
            ("tasks", "task-3", "depends_on"): ["task-1"],
        },
        {("tasks", "task-3", "depends_on"): ["task-1", "task-2"]},
    ),
    Case(
        "claimed_depends_merged",
        "task-2",
        {("tasks", "task-2", "depends_on"): ["task-1", "task-3"]},
        # Only a CLAIMED task owes MERGED dependencies; a DRAFT may wait on a CLAIMED one.
        {("tasks", "task-3", "depends_on"): ["task-2"]},
    ),
    Case(
        "integration_fix_history",
        "task-2",
        {
            ("tasks", "task-2", "integration_fix"): True,
            ("tasks", "task-2", "history"): [{"event": "claimed", "agent": "coder-1"}],
        },
        {
            ("tasks", "task-2", "integration_fix"): True,
            ("tasks", "task-2", "history"): [{"event": "integration_failed"}, {"event": "claimed"}],
        },
    ),
    Case(
        "failed_by_unique",
        "task-1",
        {("tasks", "task-1", "failed_by"): ["coder-1", "coder-2", "coder-1"]},
        {("tasks", "task-1", "failed_by"): ["coder-1", "coder-2"]},
    ),
    Case(
        "agent_status_valid",
        "agent coder-1",
        {("agents", "coder-1", "status"): "BUSY"},
        {("agents", "planner-1", "status"): "HANDOFF"},
    ),
    Case(
        "agent_id_role",
        "agent code-reviewer-1",
        {("agents", "code-reviewer-1", "role"): "coder"},
        {("agents", "code-reviewer-2"): {"role": "code_reviewer", "status": "STARTING"}},
    ),
    Case(
        "working_has_task",
        "agent coder-1",
        {("agents", "coder-1", "current_task"): None},
        # The original reads `current_task`: seed 002's planner spelling `task` does not count.
        {("agents", "planner-1", "task"): "task-3"},
    ),
    Case(
        "working_lease_missing",
        "agent coder-1",
        {("agents", "coder-1", "lease_expires"): DELETE},
        {("agents", "coder-1", "lease_expires"): "2025-01-17T14:59:30Z"},
    ),
    Case(
        "working_lease",
        "agent coder-1",
        {("agents", "coder-1", "lease_expires"): "2025-01-17T14:58:59Z"},
        {("agents", "coder-1", "lease_expires"): "2025-01-17T14:59:00Z"},
    ),
    Case(
        "agent_task_unique",
        "task-2",
        {("agents", "code-reviewer-1", "current_task"): "task-2"},
        {("agents", "planner-1", "task"): "task-3"},
    ),
    Case(
        "coder_single_active_task",
        "agent coder-1",
        {**REJECTED_TASK_3, ("tasks", "task-3", "assigned_to"): "coder-1"},
        {**REJECTED_TASK_3, ("tasks", "task-3", "assigned_to"): "coder-2"},
    ),
    Case(
        "handoff_fields",
        "handoff task-2",
        {("handoff",): {"task-2": {"agent": "coder-1", "summary": "Half done"}}},
        {("handoff",): {"task-2": {"summary": "Half done", "next_action": "Finish api.py"}}},
    ),
    Case(
        "discovery_urgency",
        "disc-1",
        {("discovered",): [{"id": "disc-1", "urgency": "soon"}]},
        # The original accepts a discovery without urgency (seed 002: deferred by default).
        {("discovered",): [{"id": "disc-1", "urgency": None}, {"urgency": "immediate"}]},
    ),
    Case(
        "anomaly_type",
        "anomaly #1",
        {("anomalies", 0, "type"): "retry"},
        {("anomalies", 0, "type"): "spec_gap"},
    ),
    Case(
        "anomaly_details",
        "anomaly #1",
        {("anomalies", 0, "details"): {"count": 3}},
        {("anomalies", 0, "details"): {"count": 0, "error_pattern": "timeout"}},
    ),
    Case(
        "sprint_status_valid",
        "sprint",
        {("sprint", "status"): "PAUSED"},
        {("sprint", "status"): "CHECKPOINT"},
    ),
    Case(
        "sprint_scope_exists",
        "sprint",
        {("sprint", "scope", "stretch"): ["task-9"]},
        {("sprint", "scope", "stretch"): ["task-3"]},
    ),
    Case(
        "sprint_goal_ref",
        "sprint",
        {("sprint", "goal_ref"): "goal-2"},
        # liza-validate.sh compares only a goal_ref that is there.
        {("sprint", "goal_ref"): DELETE},
    ),
    Case(
        "sprint_started",
        "sprint",
        {("sprint", "timeline", "started"): None},
        {("sprint", "timeline", "deadline"): "2025-01-18T14:00:00Z"},
    ),
]
CASE_IDS = [case.rule for case in CASES]


def test_every_invariant_has_a_case() -> None:
    assert list(INVARIANTS) == CASE_IDS


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_breaking_state_reports_the_rule(case: Case) -> None:
    violations = validate_state(patched(case.breaks), now=NOW)
    assert (case.rule, case.subject) in rules(violations)
    reported = next(v for v in violations if v.rule == case.rule)
    assert reported.message == INVARIANTS[case.rule]
    assert str(reported).startswith(f"{case.subject}: {INVARIANTS[case.rule]}")


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_satisfying_state_is_valid(case: Case) -> None:
    # Each satisfying state is a near miss of the breaking one, and valid as a whole.
    assert validate_state(patched(case.satisfies), now=NOW) == []


# --- details of single rules --------------------------------------------------------------------


def test_violation_str_names_subject_message_and_detail() -> None:
    violation = Violation("claimed_worktree", "task-7", INVARIANTS["claimed_worktree"], "x")
    assert str(violation) == "task-7: CLAIMED task must have worktree (x)"
    assert str(Violation("r", "state", "m")) == "state: m"


@pytest.mark.parametrize(
    ("status", "missing"),
    [
        ("BLOCKED", "blocked_reason"),
        ("BLOCKED", "blocked_questions"),
        ("SUPERSEDED", "superseded_by"),
        ("SUPERSEDED", "rescope_reason"),
    ],
)
def test_two_field_rules_name_the_missing_field(status: str, missing: str) -> None:
    fields = {
        "blocked_reason": "why",
        "blocked_questions": ["q?"],
        "superseded_by": ["task-3"],
        "rescope_reason": "why",
    }
    changes = {("tasks", "task-1", "status"): status, ("tasks", "task-2", "depends_on"): []}
    changes |= {("tasks", "task-1", name): value for name, value in fields.items()}
    changes[("tasks", "task-1", missing)] = None
    violations = [v for v in validate_state(patched(changes), now=NOW) if v.subject == "task-1"]
    assert len(violations) == 1
    assert violations[0].detail == f"missing: {missing}"


def test_blocked_questions_limit_is_the_protocol_constant() -> None:
    questions = [f"q{i}?" for i in range(MAX_BLOCKED_QUESTIONS + 1)]
    state = patched({**BLOCKED_TASK_2, ("tasks", "task-2", "blocked_questions"): questions})
    assert rules(validate_state(state, now=NOW)) == [("blocked_questions_max", "task-2")]


@pytest.mark.parametrize("flag", [False, None, "true", 1], ids=repr)
def test_only_integration_fix_true_may_skip_base_commit(flag: Any) -> None:
    # Seed 002 writes `integration_fix: true`; a quoted "true" or a 1 is not that flag.
    state = patched(
        {
            ("tasks", "task-2", "base_commit"): None,
            ("tasks", "task-2", "integration_fix"): flag,
        }
    )
    assert rules(validate_state(state, now=NOW)) == [("claimed_base_commit", "task-2")]


def test_integration_failure_is_recognised_in_history() -> None:
    state = patched(
        {
            ("tasks", "task-2", "integration_fix"): True,
            ("tasks", "task-2", "history"): [{"event": "integration_failed"}],
        }
    )
    assert validate_state(state, now=NOW) == []


@pytest.mark.parametrize(
    "history",
    [
        None,
        [],
        "integration_failed",
        [{"event": "claimed"}, "integration_failed"],
        # The original's validator reads `event == "integration_failed"` and nothing else.
        [{"event": "INTEGRATION_FAILED"}],
        [{"event": "transition", "status": "INTEGRATION_FAILED"}],
        [{"event": "transition", "from": "APPROVED", "to": "integration_failed"}],
    ],
)
def test_integration_fix_without_failure_in_history(history: Any) -> None:
    state = patched(
        {("tasks", "task-2", "integration_fix"): True, ("tasks", "task-2", "history"): history}
    )
    assert rules(validate_state(state, now=NOW)) == [("integration_fix_history", "task-2")]


def test_failed_by_names_the_repeated_ids() -> None:
    state = patched({("tasks", "task-1", "failed_by"): ["coder-2", "coder-1", "coder-2"]})
    (violation,) = validate_state(state, now=NOW)
    assert violation.detail == "repeated: coder-2"


def test_claimed_depends_merged_names_the_waiting_dependency() -> None:
    state = patched({("tasks", "task-2", "depends_on"): ["task-3"]})
    (violation,) = validate_state(state, now=NOW)
    assert (violation.rule, violation.detail) == ("claimed_depends_merged", "task-3 is DRAFT")


def test_unknown_dependency_is_not_also_reported_as_unmerged() -> None:
    state = patched({("tasks", "task-2", "depends_on"): ["task-9"]})
    assert rules(validate_state(state, now=NOW)) == [("depends_on_exists", "task-2")]


def _chain(links: Mapping[str, list[str]]) -> dict[str, Any]:
    """BASE plus DRAFT tasks with the given depends_on."""
    changes = {
        ("tasks", task_id): {"id": task_id, "status": "DRAFT", "depends_on": deps}
        for task_id, deps in links.items()
    }
    return patched(changes)


@pytest.mark.parametrize(
    ("links", "subject", "path"),
    [
        ({"task-a": ["task-a"]}, "task-a", "task-a → task-a"),
        ({"task-a": ["task-b"], "task-b": ["task-a"]}, "task-a", "task-a → task-b → task-a"),
        # Reached through task-c, the cycle is still named from its first task in the file.
        (
            {"task-a": ["task-c"], "task-b": ["task-c"], "task-c": ["task-b"]},
            "task-b",
            "task-b → task-c → task-b",
        ),
        (
            {"task-a": ["task-b"], "task-b": ["task-c"], "task-c": ["task-a"]},
            "task-a",
            "task-a → task-b → task-c → task-a",
        ),
    ],
)
def test_dependency_cycle_is_named(links: dict[str, list[str]], subject: str, path: str) -> None:
    violations = validate_state(_chain(links), now=NOW)
    assert [(v.rule, v.subject, v.detail) for v in violations] == [
        ("depends_on_acyclic", subject, path)
    ]


def test_two_separate_cycles_are_each_reported_once() -> None:
    links = {
        "task-a": ["task-b"],
        "task-b": ["task-a"],
        "task-c": ["task-d"],
        "task-d": ["task-c", "task-a"],
    }
    details = [v.detail for v in validate_state(_chain(links), now=NOW)]
    assert details == ["task-a → task-b → task-a", "task-c → task-d → task-c"]


def test_a_long_dependency_chain_is_not_a_cycle_and_does_not_recurse() -> None:
    links = {f"task-x{i}": [f"task-x{i + 1}"] for i in range(5000)}
    links["task-x5000"] = []
    assert validate_state(_chain(links), now=NOW) == []
    links["task-x5000"] = ["task-x0"]
    (violation,) = validate_state(_chain(links), now=NOW)
    assert violation.rule == "depends_on_acyclic"
    assert violation.detail.startswith("task-x0 → task-x1 → ")
    assert violation.detail.endswith("task-x5000 → task-x0")


def test_agents_sharing_a_task_through_either_key() -> None:
    state = patched({("agents", "planner-1", "task"): "task-2"})
    (violation,) = validate_state(state, now=NOW)
    assert (violation.rule, violation.subject) == ("agent_task_unique", "task-2")
    assert violation.detail == "held by coder-1, planner-1"


def test_coder_on_several_active_tasks_lists_them() -> None:
    state = patched({**REJECTED_TASK_3, ("tasks", "task-3", "assigned_to"): "coder-1"})
    (violation,) = validate_state(state, now=NOW)
    assert violation.detail == "holds task-2 (CLAIMED), task-3 (REJECTED)"


@pytest.mark.parametrize("status", ["BLOCKED", "APPROVED", "MERGED", "INTEGRATION_FAILED"])
def test_inactive_tasks_do_not_count_as_held(status: str) -> None:
    task = {
        "id": "task-4",
        "status": status,
        "assigned_to": "coder-1",
        "spec_ref": "s.md",
        "done_when": "done",
        "blocked_reason": "why",
        "blocked_questions": ["q?"],
    }
    assert validate_state(patched({("tasks", "task-4"): task}), now=NOW) == []


@pytest.mark.parametrize(
    ("agent_id", "role"),
    [
        ("coder-1", "code_reviewer"),
        ("code_reviewer-1", "code_reviewer"),
        ("coder-0", "coder"),
        ("coder", "coder"),
        ("planner-1", None),
        ("planner-1", "Planner"),
    ],
)
def test_agent_id_must_match_role(agent_id: str, role: str | None) -> None:
    state = patched({("agents", agent_id): {"role": role, "status": "IDLE"}})
    assert rules(validate_state(state, now=NOW)) == [("agent_id_role", f"agent {agent_id}")]


# --- anomalies: every type, with and without each required field -------------------------------


def _anomaly_state(kind: str, details: Any) -> dict[str, Any]:
    return patched({("anomalies", 0): {"task": "task-2", "type": kind, "details": details}})


def _full_details(kind: str) -> dict[str, Any]:
    return {name: f"{name} value" for name in ANOMALY_REQUIRED_FIELDS[kind]}


@pytest.mark.parametrize("kind", list(ANOMALY_REQUIRED_FIELDS))
def test_anomaly_with_all_required_fields_is_valid(kind: str) -> None:
    assert validate_state(_anomaly_state(kind, _full_details(kind)), now=NOW) == []


@pytest.mark.parametrize(
    ("kind", "field"),
    [(kind, name) for kind, names in ANOMALY_REQUIRED_FIELDS.items() for name in names],
)
@pytest.mark.parametrize("absent", [DELETE, None, "", []], ids=["key", "null", "empty", "[]"])
def test_anomaly_without_a_required_field(kind: str, field: str, absent: Any) -> None:
    details = _full_details(kind)
    if absent is DELETE:
        del details[field]
    else:
        details[field] = absent
    violations = validate_state(_anomaly_state(kind, details), now=NOW)
    assert rules(violations) == [("anomaly_details", "anomaly #1")]
    assert violations[0].detail == f"{kind} details missing: {field}"


@pytest.mark.parametrize(
    "kind", [kind for kind, names in ANOMALY_REQUIRED_FIELDS.items() if not names]
)
def test_anomaly_type_without_required_fields_needs_no_details(kind: str) -> None:
    state = patched({("anomalies", 0): {"task": "task-2", "type": kind}})
    assert validate_state(state, now=NOW) == []


@pytest.mark.parametrize(
    "kind", [kind for kind, names in ANOMALY_REQUIRED_FIELDS.items() if len(names) > 1]
)
def test_anomaly_without_details_names_every_missing_field(kind: str) -> None:
    state = patched({("anomalies", 0): {"task": "task-2", "type": kind}})
    (violation,) = validate_state(state, now=NOW)
    assert violation.detail == f"{kind} details missing: {', '.join(ANOMALY_REQUIRED_FIELDS[kind])}"


def test_false_and_zero_are_present_details() -> None:
    details = {"what": "flatten", "why": "unblock", "debt_created": False}
    assert validate_state(_anomaly_state("trade_off", details), now=NOW) == []


# --- time: the 60 s grace and the reference clock -----------------------------------------------

LEASE_PATHS = {
    "claimed_lease_expires": ("tasks", "task-2", "lease_expires"),
    "working_lease": ("agents", "coder-1", "lease_expires"),
}


@pytest.mark.parametrize("rule", list(LEASE_PATHS))
@pytest.mark.parametrize(
    ("offset", "valid"),
    [
        (timedelta(minutes=5), True),
        (timedelta(0), True),
        (-GRACE + timedelta(seconds=1), True),
        (-GRACE, True),
        (-GRACE - timedelta(seconds=1), False),
        (-timedelta(hours=1), False),
    ],
)
@pytest.mark.parametrize("as_text", [True, False], ids=["iso-string", "datetime"])
def test_lease_grace_boundary(rule: str, offset: timedelta, valid: bool, as_text: bool) -> None:
    expires = NOW + offset
    value = expires.strftime("%Y-%m-%dT%H:%M:%SZ") if as_text else expires
    violations = validate_state(patched({LEASE_PATHS[rule]: value}), now=NOW)
    assert rules(violations) == ([] if valid else [(rule, rules_subject(rule))])


def rules_subject(rule: str) -> str:
    return "task-2" if rule == "claimed_lease_expires" else "agent coder-1"


@pytest.mark.parametrize("rule", list(LEASE_PATHS))
def test_lease_is_judged_at_the_given_now(rule: str) -> None:
    state = patched()  # leases end at 15:05:00Z
    assert validate_state(state, now=datetime(2025, 1, 17, 15, 6, tzinfo=UTC)) == []
    late = validate_state(state, now=datetime(2025, 1, 17, 15, 6, 1, tzinfo=UTC))
    assert (rule, rules_subject(rule)) in rules(late)


def test_naive_now_is_read_as_utc() -> None:
    state = patched()
    assert validate_state(state, now=datetime(2025, 1, 17, 15, 6)) == []
    assert len(validate_state(state, now=datetime(2025, 1, 17, 15, 6, 1))) == 2


def test_without_now_the_latest_heartbeat_is_the_clock() -> None:
    state = patched({("agents", "code-reviewer-1", "heartbeat"): "2025-01-17T15:06:01Z"})
    assert reference_time(state) == datetime(2025, 1, 17, 15, 6, 1, tzinfo=UTC)
    assert rules(validate_state(state)) == [
        ("claimed_lease_expires", "task-2"),
        ("working_lease", "agent coder-1"),
    ]
    assert validate_state(patched()) == []


def test_unparseable_heartbeats_do_not_set_the_clock() -> None:
    state = patched({("agents", "code-reviewer-1", "heartbeat"): "yesterday"})
    assert reference_time(state) == NOW


def test_without_heartbeats_the_clock_is_the_real_time() -> None:
    state = patched({("agents",): {}})
    before = datetime.now(UTC)
    moment = reference_time(state)
    assert before <= moment <= datetime.now(UTC)
    # The base leases ended in 2025, so against the real clock the claim is stale.
    assert rules(validate_state(state)) == [("claimed_lease_expires", "task-2")]


# --- malformed input: violations, never exceptions ----------------------------------------------

MALFORMED: list[tuple[str, Any, str, str]] = [
    ("state-none", None, "section_shape", "state"),
    ("state-list", [BASE], "section_shape", "state"),
    ("tasks-mapping", patched({("tasks",): {"task-1": {}}}), "section_shape", "tasks"),
    ("tasks-string", patched({("tasks",): "task-1"}), "section_shape", "tasks"),
    ("task-string", patched({("tasks", 0): "task-1"}), "entry_shape", "task #1"),
    (
        "task-id-list",
        patched({("tasks", "task-3", "id"): ["task-3"]}),
        "task_id_missing",
        "task #3",
    ),
    (
        "task-status-list",
        patched({("tasks", "task-3", "status"): ["DRAFT"]}),
        "task_status_valid",
        "task-3",
    ),
    (
        "task-status-missing",
        patched({("tasks", "task-3", "status"): DELETE}),
        "task_status_valid",
        "task-3",
    ),
    (
        "lease-words",
        patched({("tasks", "task-2", "lease_expires"): "in five minutes"}),
        "claimed_lease_expires",
        "task-2",
    ),
    (
        "lease-number",
        patched({("tasks", "task-2", "lease_expires"): 1737126300}),
        "claimed_lease_expires",
        "task-2",
    ),
    (
        "lease-date",
        patched({("tasks", "task-2", "lease_expires"): date(2025, 1, 17)}),
        "claimed_lease_expires",
        "task-2",
    ),
    (
        "lease-out-of-range",
        patched({("agents", "coder-1", "lease_expires"): "2025-13-45T99:00:00Z"}),
        "working_lease",
        "agent coder-1",
    ),
    (
        "lease-mapping",
        patched({("agents", "coder-1", "lease_expires"): {"at": "15:05"}}),
        "working_lease",
        "agent coder-1",
    ),
    (
        "depends-on-mapping",
        patched({("tasks", "task-2", "depends_on"): {"task-1": True}}),
        "depends_on_exists",
        "task-2",
    ),
    (
        "depends-on-nested",
        patched({("tasks", "task-2", "depends_on"): [["task-1"]]}),
        "depends_on_exists",
        "task-2",
    ),
    ("agents-list", patched({("agents",): ["coder-1"]}), "section_shape", "agents"),
    ("agent-string", patched({("agents", "planner-1"): "IDLE"}), "entry_shape", "agent planner-1"),
    (
        "agent-role-list",
        patched({("agents", "planner-1", "role"): ["planner"]}),
        "agent_id_role",
        "agent planner-1",
    ),
    (
        "agent-id-int",
        patched({("agents", 7): {"role": "coder", "status": "IDLE"}}),
        "agent_id_role",
        "agent 7",
    ),
    (
        "agent-status-mapping",
        patched({("agents", "planner-1", "status"): {"IDLE": True}}),
        "agent_status_valid",
        "agent planner-1",
    ),
    (
        "agent-task-mapping",
        patched(
            {
                ("agents", "coder-1", "current_task"): {"id": "task-2"},
                ("agents", "planner-1", "task"): {"id": "task-2"},
            }
        ),
        "agent_task_unique",
        "{'id': 'task-2'}",
    ),
    ("goal-string", patched({("goal",): "goal-1"}), "section_shape", "goal"),
    ("goal-status-missing", patched({("goal", "status"): DELETE}), "goal_status_valid", "goal"),
    (
        "anomalies-mapping",
        patched({("anomalies",): {"type": "retry_loop"}}),
        "section_shape",
        "anomalies",
    ),
    ("anomaly-string", patched({("anomalies", 0): "retry_loop"}), "entry_shape", "anomaly #1"),
    (
        "anomaly-type-list",
        patched({("anomalies", 0, "type"): ["retry_loop"]}),
        "anomaly_type",
        "anomaly #1",
    ),
    (
        "anomaly-details-string",
        patched({("anomalies", 0, "details"): "count=3"}),
        "anomaly_details",
        "anomaly #1",
    ),
    ("sprint-list", patched({("sprint",): ["sprint-1"]}), "section_shape", "sprint"),
    (
        "sprint-scope-list",
        patched({("sprint", "scope"): ["task-1"]}),
        "section_shape",
        "sprint.scope",
    ),
    (
        "sprint-scope-mapping-entry",
        patched({("sprint", "scope", "planned"): [{"id": "task-1"}]}),
        "sprint_scope_exists",
        "sprint",
    ),
    ("config-list", patched({("config",): ["lease_duration"]}), "section_shape", "config"),
    ("version-missing", patched({("version",): DELETE}), "required_fields", "state"),
    ("goal-null", patched({("goal",): None}), "required_fields", "state"),
]


@pytest.mark.parametrize(
    ("state", "rule", "subject"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_malformed_input_is_a_violation(state: Any, rule: str, subject: str) -> None:
    assert (rule, subject) in rules(validate_state(state, now=NOW))


def test_malformed_tasks_section_does_not_flood_references() -> None:
    # With no readable tasks, sprint scope references cannot be judged: one violation, not many.
    state = patched({("tasks",): "oops"})
    assert rules(validate_state(state, now=NOW)) == [("section_shape", "tasks")]


def _leaf_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(node, Mapping):
        for key, value in node.items():
            paths += _leaf_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            paths += _leaf_paths(value, (*prefix, index))
    return paths


ODD_VALUES = [None, "", [], {}, 0, True, 3.5, "x", ["x"], [None], {"x": [1]}, NOW, date(2025, 1, 1)]


@pytest.mark.parametrize("odd", ODD_VALUES, ids=[repr(v)[:20] for v in ODD_VALUES])
def test_any_value_anywhere_never_raises(odd: Any) -> None:
    for path in _leaf_paths(BASE):
        for state in (patched({path: odd}), patched({path: DELETE})):
            violations = validate_state(state, now=NOW)
            assert all(isinstance(v, Violation) and v.rule in INVARIANTS for v in violations)
            assert isinstance(reference_time(state), datetime)
            validate_state(state)  # and with the reference clock


# --- ordering -------------------------------------------------------------------------------------


def test_violations_come_by_section_then_rule_then_file_order() -> None:
    state = patched(
        {
            ("sprint", "status"): "PAUSED",
            ("anomalies", 0, "type"): "oops",
            ("agents", "coder-1", "status"): "BUSY",
            ("tasks", "task-3", "assigned_to"): "coder-9",
            ("tasks", "task-1", "failed_by"): ["coder-1", "coder-1"],
            ("tasks", "task-1", "worktree"): "wt",
            ("tasks", "task-2", "worktree"): None,
            ("goal", "status"): "DONE",
            ("config",): DELETE,
        }
    )
    assert rules(validate_state(state, now=NOW)) == [
        ("required_fields", "state"),
        ("goal_status_valid", "goal"),
        ("draft_no_assignee", "task-3"),
        ("claimed_worktree", "task-2"),
        ("merged_no_worktree", "task-1"),
        ("failed_by_unique", "task-1"),
        ("agent_status_valid", "agent coder-1"),
        ("anomaly_type", "anomaly #1"),
        ("sprint_status_valid", "sprint"),
    ]
    assert validate_state(state, now=NOW) == validate_state(copy.deepcopy(state), now=NOW)


# --- the seed's example, as written and as repaired ---------------------------------------------


def _load_fixture(name: str) -> dict[str, Any]:
    path = FIXTURES / name / ".liza" / "state.yaml"
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_repaired_seed_example_is_valid() -> None:
    state = _load_fixture("seed-002-valid")
    assert reference_time(state) == datetime(2025, 1, 17, 14, 52, tzinfo=UTC)
    assert validate_state(state) == []


def test_seed_example_as_written_is_invalid() -> None:
    violations = validate_state(_load_fixture("seed-002-example"))
    assert rules(violations) == [
        ("claimed_lease_missing", "task-7"),
        ("coder_single_active_task", "agent coder-1"),
    ]
    assert violations[0].detail == "lease_expires is missing"
    assert violations[1].detail == (
        "holds task-2 (REJECTED), task-7 (CLAIMED), task-8 (READY_FOR_REVIEW)"
    )


def test_validator_imports_no_django() -> None:
    # It also runs on plain files (liza_validate on a state.yaml), outside a configured Django.
    code = (
        "import sys, boards.interop.validation; "
        "sys.exit(sorted(m for m in sys.modules if m.split('.')[0] == 'django') != [])"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 0


# --- judged as the original liza-validate.sh judges them ------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # `!= null`: an empty value is still had.
        ({("tasks", "task-3", "assigned_to"): ""}, ("draft_no_assignee", "task-3")),
        ({("tasks", "task-1", "worktree"): ""}, ("merged_no_worktree", "task-1")),
        # `yq -e` takes false for absence.
        ({("version",): False}, ("required_fields", "state")),
        ({("goal",): None}, ("required_fields", "state")),
        ({("sprint",): DELETE}, ("required_fields", "state")),
        # A WORKING agent's task is read from `current_task` only.
        (
            {
                ("agents", "coder-1", "current_task"): DELETE,
                ("agents", "coder-1", "task"): "task-2",
            },
            ("working_has_task", "agent coder-1"),
        ),
    ],
    ids=[
        "draft-empty-assignee",
        "merged-empty-worktree",
        "version-false",
        "goal-null",
        "no-sprint",
        "working-task-key",
    ],
)
def test_what_the_original_rejects_we_reject(changes, expected) -> None:
    violations = validate_state(patched(changes), now=NOW)
    assert rules(violations)[0] == expected
    assert all(v.original for v in violations)  # the original would stop at the first
