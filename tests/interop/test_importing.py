"""`liza_import` (SPEC §8): seed 002's files become a project, or nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.models import Agent
from boards.coordination.models.projects import Goal, Project, ProjectConfig, Sprint
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.interop.reading import read_liza_dir
from boards.interop.validation import validate_state

pytestmark = pytest.mark.django_db


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def row_counts() -> dict[str, int]:
    models = (Project, Task, Agent, Event, Goal, Sprint, Review, Discovery, Handoff, HumanNote)
    return {m.__name__: m.objects.count() for m in (*models, SpecChange, Anomaly)}


# -- the valid fixture ---------------------------------------------------------------------------


def test_valid_fixture_imports_strictly_with_every_row(manage, valid_dir):
    run = manage("liza_import", str(valid_dir), project="seed", name="Seed 002")

    assert run.code == 0, run.err
    # 8 log entries + task-1's `created` + task-7's three history entries; task-1's other four
    # history entries are the log's own events (seed 002 writes them in both places).
    assert run.out_lines == ["Imported 10 tasks, 3 agents, 12 events into project seed"]
    project = Project.objects.get(slug="seed")
    assert project.name == "Seed 002"
    assert row_counts() == {
        "Project": 1,
        "Task": 10,
        "Agent": 3,
        "Event": 12,
        "Goal": 1,
        "Sprint": 1,
        "Review": 1,
        "Discovery": 2,
        "Handoff": 1,
        "HumanNote": 1,
        "SpecChange": 2,
        "Anomaly": 3,
    }
    assert CircuitBreakerCheck.objects.filter(project=project).count() == 1


def test_valid_fixture_restores_every_status_and_field(manage, valid_dir):
    manage("liza_import", str(valid_dir), project="seed")
    tasks = {t.key: t for t in Task.objects.filter(project__slug="seed")}

    assert {k: t.status for k, t in tasks.items()} == {
        "task-1": "MERGED",
        "task-2": "REJECTED",
        "task-3": "DRAFT",
        "task-4": "SUPERSEDED",
        "task-4a": "UNCLAIMED",
        "task-4b": "UNCLAIMED",
        "task-6": "BLOCKED",
        "task-7": "CLAIMED",
        "task-5": "BLOCKED",
        "task-8": "READY_FOR_REVIEW",
    }
    t2 = tasks["task-2"]
    assert (t2.iteration, t2.review_cycles_current, t2.review_cycles_total) == (3, 2, 2)
    assert t2.rejection_reason.startswith("Retry should not apply")
    assert tasks["task-4"].superseded_by == ["task-4a", "task-4b"]
    assert tasks["task-4b"].supersedes == "task-4"
    assert [d.key for d in tasks["task-4b"].depends_on.all()] == ["task-4a"]
    assert tasks["task-6"].failed_by == ["coder-1", "coder-2"]
    assert len(tasks["task-5"].attempted) == 2 and len(tasks["task-5"].blocked_questions) == 2
    t7 = tasks["task-7"]
    assert t7.integration_fix is True and t7.lease_expires == at("2025-01-17T16:36:00Z")
    assert all(t.goal.goal_id == "goal-1" for t in tasks.values())

    review = Review.objects.get(task=tasks["task-8"])
    assert (review.reviewer, review.review_commit, review.verdict) == (
        "code-reviewer-1",
        "c3d4e5f6",
        "",
    )
    assert review.lease_expires == at("2025-01-17T17:05:00Z") and review.closed_at is None
    # No claim time in the file: a lease runs lease_duration (300 s) from its claim, which
    # would be 17:00, after the file's own now (its latest heartbeat, 14:52): a claim is never
    # later than that.
    assert review.claimed_at == at("2025-01-17T14:52:00Z")

    agents = {a.agent_id: a for a in Agent.objects.filter(project__slug="seed")}
    assert agents["coder-1"].current_task == t2 and agents["coder-1"].status == "WORKING"
    assert (agents["coder-1"].iterations_total, agents["coder-1"].context_percent) == (47, 34)
    assert agents["planner-1"].current_task is None and agents["planner-1"].role == "planner"

    sprint = Sprint.objects.get(project__slug="seed")
    assert sorted(t.key for t in sprint.planned.all()) == [f"task-{n}" for n in range(1, 6)]
    assert [t.key for t in sprint.stretch.all()] == ["task-6"]
    assert sprint.metrics["review_verdict_approval_rate_percent"] == 80
    assert Handoff.objects.get(task=tasks["task-5"]).context_used == "91%"
    assert HumanNote.objects.get().task == t2
    # disc-2 names a task the file never lists (seed 002's own example): kept as text.
    assert Discovery.objects.get(disc_id="disc-2").converted_to_task == "task-3a"
    assert ProjectConfig.objects.get(project__slug="seed").escalation_webhook == ""
    assert CircuitBreaker.objects.get(project__slug="seed").last_check == at("2025-01-18T17:30:00Z")


def test_events_from_log_and_history_are_one_table(manage, valid_dir):
    manage("liza_import", str(valid_dir), project="seed")
    task1 = Event.objects.filter(task__key="task-1").order_by("timestamp", "id")

    assert [(e.action, e.actor_id, e.actor_kind) for e in task1] == [
        ("created", "", "system"),
        ("claimed", "coder-1", "agent"),
        ("claim_failed", "coder-1", "agent"),
        ("ready_for_review", "coder-1", "agent"),
        ("approved", "code-reviewer-1", "agent"),
        ("merged", "code-reviewer-1", "agent"),
    ]
    # The history entry's extra key joined the log's event; the log's detail was kept.
    submitted = task1.get(action="ready_for_review")
    assert submitted.data == {"commit": "a1b2c3d4", "liza:only": {"history": ["commit"]}}
    assert submitted.detail == "Iteration 2, commit a1b2c3d4"
    # task-7's history names a task that does not exist: kept in data, detail from the note.
    task7 = {e.action: e for e in Event.objects.filter(task__key="task-7")}
    # It was in task-7's history only, so it is exported there only (liza:view).
    assert task7["integration_failed"].data == {"task": "task-1-retry", "liza:view": "history"}
    assert task7["created"].detail == "integration-fix scope"
    assert Event.objects.filter(task__isnull=True).count() == 2  # goal_created, tasks_finalized


# -- the seed's own example: strict refusal, lenient import ------------------------------------


def test_example_fixture_is_refused_strictly_naming_every_violation(manage, example_dir):
    state, _ = read_liza_dir(example_dir)

    run = manage("liza_import", str(example_dir), project="example")

    assert run.code == 1
    invalid = [line for line in run.err_lines if line.startswith("INVALID: ")]
    assert invalid == [f"INVALID: {v}" for v in validate_state(state)]
    # The seed's example breaks two invariants: no lease on task-7, coder-1 on three tasks.
    assert len(invalid) == 2
    assert invalid[0].startswith("INVALID: task-7: CLAIMED task must have lease_expires")
    assert invalid[1].startswith("INVALID: agent coder-1: No two agents assigned to same task")
    assert "task-2" in invalid[1] and "task-7" in invalid[1] and "task-8" in invalid[1]
    assert "nothing was written" in run.err
    assert run.out == ""
    assert set(row_counts().values()) == {0}


def test_example_fixture_imports_leniently_and_keeps_its_violations(manage, example_dir):
    imported = manage("liza_import", str(example_dir), project="example", lenient=True)

    assert imported.code == 0, imported.err
    assert imported.out_lines[0] == "Imported 10 tasks, 3 agents, 12 events into project example"
    reported = imported.out_lines[1:]
    assert len(reported) == 2 and all(line.startswith("INVALID: ") for line in reported)

    validated = manage("liza_validate", project="example")

    assert validated.code == 1
    assert validated.out_lines == reported


def test_an_existing_slug_is_refused_and_left_alone(manage, valid_dir):
    manage("liza_import", str(valid_dir), project="seed")
    before = row_counts()

    run = manage("liza_import", str(valid_dir), project="seed")

    assert run.code == 1
    assert "project 'seed' already exists" in run.err
    assert row_counts() == before


# -- files that cannot be stored: hard errors, even with --lenient ------------------------------


def base_state() -> dict[str, Any]:
    """A small state that imports strictly (asserted below), for the bad-input cases."""
    return {
        "version": 1,
        "goal": {
            "id": "goal-1",
            "description": "Ship it",
            "created": "2025-01-17T14:00:00Z",
            "status": "IN_PROGRESS",
        },
        "tasks": [
            {
                "id": "t-1",
                "description": "First",
                "status": "UNCLAIMED",
                "priority": 1,
                "spec_ref": "specs/a.md",
                "done_when": "done",
                "created": "2025-01-17T14:05:00Z",
            },
            {
                "id": "t-2",
                "description": "Second",
                "status": "UNCLAIMED",
                "priority": 2,
                "spec_ref": "specs/a.md",
                "done_when": "done",
                "depends_on": ["t-1"],
                "created": "2025-01-17T14:06:00Z",
            },
        ],
        "agents": {
            "coder-1": {"role": "coder", "status": "IDLE", "heartbeat": "2025-01-17T14:10:00Z"}
        },
        "discovered": [],
        "anomalies": [],
        "sprint": {
            "id": "sprint-1",
            "goal_ref": "goal-1",
            "scope": {"planned": ["t-1", "t-2"], "stretch": []},
            "timeline": {"started": "2025-01-17T14:00:00Z"},
            "status": "IN_PROGRESS",
        },
        "config": {"lease_duration": 300},
    }


def base_log() -> list[dict[str, Any]]:
    return [{"timestamp": "2025-01-17T14:00:00Z", "agent": "planner-1", "action": "goal_created"}]


def write_liza(root: Path, state: Any, log: Any = None) -> Path:
    liza = root / ".liza"
    liza.mkdir(parents=True)
    for name, data in (("state.yaml", state), ("log.yaml", base_log() if log is None else log)):
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        (liza / name).write_text(text, encoding="utf-8")
    return root


def task(state: dict, key: str) -> dict:
    return next(t for t in state["tasks"] if t["id"] == key)


def _unknown_status(s):
    task(s, "t-1")["status"] = "DONE"


def _dangling(s):
    task(s, "t-2")["depends_on"] = ["t-1", "t-9"]


def _cycle(s):
    task(s, "t-1")["depends_on"] = ["t-2"]


def _bad_timestamp(s):
    task(s, "t-1")["created"] = "yesterday"


def _no_id(s):
    del task(s, "t-2")["id"]


def _duplicate_id(s):
    task(s, "t-2")["id"] = "t-1"


def _anomaly_type(s):
    s["anomalies"] = [
        {"timestamp": "2025-01-17T14:20:00Z", "reporter": "coder-1", "type": "gremlins"}
    ]


def _severity(s):
    s["discovered"] = [
        {
            "id": "disc-1",
            "by": "coder-1",
            "description": "x",
            "severity": "urgent",
            "created": "2025-01-17T14:20:00Z",
        }
    ]


def _criticality(s):
    task(s, "t-1")["criticality"] = "extreme"


def _agent_role(s):
    s["agents"]["coder-1"]["role"] = "manager"


def _agent_status(s):
    s["agents"]["coder-1"]["status"] = "SLEEPING"


def _agent_task(s):
    s["agents"]["coder-1"]["current_task"] = "t-9"


def _tasks_not_a_list(s):
    s["tasks"] = {"t-1": {}}


BAD_STATES = {
    "unknown task status": (_unknown_status, "task t-1: status: 'DONE' is not one of: DRAFT"),
    "dangling depends_on": (
        _dangling,
        "task t-2: depends_on: names t-9, which is not a task in state.yaml",
    ),
    "dependency cycle": (_cycle, "tasks: depends_on cycle: t-1 → t-2 → t-1"),
    "bad timestamp": (
        _bad_timestamp,
        "task t-1: created: 'yesterday' is not an ISO 8601 timestamp",
    ),
    "task without id": (_no_id, "task #2: id: missing"),
    "duplicate id": (_duplicate_id, "task t-1: duplicate id (also task #1)"),
    "unknown anomaly type": (
        _anomaly_type,
        "anomaly #1: type: 'gremlins' is not one of: retry_loop",
    ),
    "bad severity": (_severity, "discovery #1: severity: 'urgent' is not one of: critical, high"),
    "bad criticality": (_criticality, "task t-1: criticality: 'extreme' is not one of: standard"),
    "bad agent role": (_agent_role, "agent coder-1: role: 'manager' is not one of: planner"),
    "bad agent status": (_agent_status, "agent coder-1: status: 'SLEEPING' is not one of:"),
    "tasks not a list": (_tasks_not_a_list, "state.yaml: tasks: must be a list, found a mapping"),
}


def test_the_base_state_of_the_bad_input_cases_imports(manage, tmp_path):
    run = manage("liza_import", str(write_liza(tmp_path, base_state())), project="base")

    assert run.code == 0, run.err
    assert run.out_lines == ["Imported 2 tasks, 1 agents, 1 events into project base"]


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
@pytest.mark.parametrize("case", list(BAD_STATES))
def test_a_state_that_cannot_be_stored_is_a_clear_error(manage, tmp_path, case, lenient):
    spoil, expected = BAD_STATES[case]
    state = base_state()
    spoil(state)

    run = manage("liza_import", str(write_liza(tmp_path, state)), project="bad", lenient=lenient)

    assert run.code == 1
    assert expected in run.err
    assert "Traceback" not in run.err and run.out == ""
    assert set(row_counts().values()) == {0}


BAD_FILES = {
    "state not YAML": (
        "tasks: [\n  - id: t-1\n  status: : :\n",
        None,
        "state.yaml: not valid YAML: line",
    ),
    "state a list": ("- a\n- b\n", None, "state.yaml: the top level must be a mapping"),
    "log a mapping": (None, "a: 1\n", "log.yaml: the top level must be a list"),
    "log entry without timestamp": (
        None,
        [{"agent": "coder-1", "action": "claimed"}],
        "log.yaml: entry #1: timestamp: missing",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_file_that_is_not_a_blackboard_is_a_clear_error(manage, tmp_path, case):
    state, log, expected = BAD_FILES[case]
    root = write_liza(tmp_path, base_state() if state is None else state, log)

    run = manage("liza_import", str(root), project="bad", lenient=True)

    assert run.code == 1
    assert expected in run.err
    assert set(row_counts().values()) == {0}


def test_missing_directory_and_missing_log_are_named(manage, tmp_path):
    missing = manage("liza_import", str(tmp_path / "nowhere"), project="bad")
    root = write_liza(tmp_path / "nolog", base_state())
    (root / ".liza" / "log.yaml").unlink()
    no_log = manage("liza_import", str(root / ".liza"), project="bad")  # the .liza dir itself

    assert missing.code == 1 and "nowhere: no such directory" in missing.err
    assert no_log.code == 1 and "log.yaml: missing" in no_log.err
    assert Project.objects.count() == 0


def test_an_agent_on_a_task_the_file_lacks_is_a_gap_lenient_reads(manage, tmp_path):
    # The fork's planner supervisor writes `current_task: planning`, which names no task.
    state = base_state()
    state["agents"]["coder-1"]["current_task"] = "planning"
    root = write_liza(tmp_path, state)

    strict = manage("liza_import", str(root), project="strict")
    lenient = manage("liza_import", str(root), project="lenient", lenient=True)

    where = f"{root / '.liza' / 'state.yaml'}: agent coder-1: current_task"
    assert strict.code == 1
    assert f"{where}: names planning, which is not a task in state.yaml (--lenient:" in strict.err
    assert lenient.code == 0
    assert (
        f"WARNING: {where}: names planning, which is not a task in state.yaml; the agent is "
        "imported holding no task" in lenient.out_lines
    )
    assert Agent.objects.get(project__slug="lenient").current_task is None
