"""`liza_export` (SPEC §8): export → import → export gives the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.services import agent_handoff, agent_leave
from boards.coordination.models.projects import Project
from boards.coordination.services import sprints
from boards.coordination.services.goals import goal_create
from boards.interop.exporting import export_log, export_state, write_liza_dir
from boards.interop.reading import read_liza_dir
from boards.interop.validation import validate_state
from boards.interop.yaml_io import dump_yaml
from boards.protocol import parse_timestamp
from tests.interop.test_importing import base_state, write_liza
from tests.interop.test_importing import task as task_entry

pytestmark = pytest.mark.django_db

FIXTURES = {"seed-002-valid": False, "seed-002-example": True}  # fixture → needs --lenient


def export_texts(root: Path) -> tuple[str, str]:
    liza = root / ".liza"
    return (liza / "state.yaml").read_text(), (liza / "log.yaml").read_text()


@pytest.mark.parametrize("fixture", ["seed-002-valid"])
def test_export_import_export_is_byte_stable(manage, seed_fixtures, tmp_path, fixture):
    lenient = FIXTURES[fixture]
    assert (
        manage("liza_import", str(seed_fixtures / fixture), project="one", lenient=lenient).code
        == 0
    )

    first = manage("liza_export", str(tmp_path / "first"), project="one")
    again = manage("liza_import", str(tmp_path / "first"), project="two", lenient=lenient)
    second = manage("liza_export", str(tmp_path / "second"), project="two")

    assert (first.code, again.code, second.code) == (0, 0, 0), again.err
    assert first.out_lines == [
        str(tmp_path / "first" / ".liza" / "state.yaml"),
        str(tmp_path / "first" / ".liza" / "log.yaml"),
        str(tmp_path / "first" / ".liza" / "alerts.log"),
    ]
    assert export_texts(tmp_path / "first") == export_texts(tmp_path / "second")
    # Both projects hold the same rows, not just the same text.
    one, two = Project.objects.get(slug="one"), Project.objects.get(slug="two")
    for related in ("tasks", "agents", "events", "reviews", "discoveries", "anomalies"):
        assert getattr(one, related).count() == getattr(two, related).count(), related


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_export_says_what_the_file_said(manage, seed_fixtures, fixture):
    original, original_log = read_liza_dir(seed_fixtures / fixture)
    manage("liza_import", str(seed_fixtures / fixture), project="one", lenient=FIXTURES[fixture])
    project = Project.objects.get(slug="one")

    exported = export_state(project)

    assert list(exported) == [
        "version",
        "goal",
        "tasks",
        "agents",
        "discovered",
        "handoff",
        "human_notes",
        "spec_changes",
        "anomalies",
        "sprint",
        "circuit_breaker",
        "config",
    ]
    # The same verdict from the validator, and the same facts, section by section.
    assert [str(v) for v in validate_state(exported)] == [str(v) for v in validate_state(original)]
    for section in ("goal", "agents", "discovered", "handoff", "human_notes", "spec_changes"):
        assert exported[section] == yaml.safe_load(dump_yaml(original[section])), section
    assert exported["anomalies"] == original["anomalies"]
    for section in ("sprint", "circuit_breaker", "config"):
        assert exported[section] == original[section], section
    by_id = {task["id"]: task for task in original["tasks"]}
    for task in exported["tasks"]:
        # Keys the file wrote empty (`worktree: null`) are written back as they were.
        expected = {k: v for k, v in by_id[task["id"]].items() if v is not False}
        expected.pop("history", None)
        assert {k: v for k, v in task.items() if k != "history"} == expected, task["id"]
    # log.yaml holds what was logged, in its order: nothing from the histories is added.
    assert dump_yaml(export_log(project)) == dump_yaml(original_log)
    # Each history keeps its entries in append order (task-7's is not in time order).
    for task in exported["tasks"]:
        written = [
            (parse_timestamp(e["time"]), e["event"]) for e in by_id[task["id"]].get("history", [])
        ]
        assert [(e["time"], e["event"]) for e in task.get("history", [])] == written, task["id"]


def test_export_is_seed_002_yaml(manage, valid_dir, tmp_path):
    manage("liza_import", str(valid_dir), project="one")
    manage("liza_export", str(tmp_path), project="one")
    state_text, log_text = export_texts(tmp_path)

    # Timestamps plain and to the second, like the seed writes them.
    assert "  created: 2025-01-17T14:00:00Z\n" in state_text
    assert "- timestamp: 2025-01-17T14:00:00Z\n  agent: planner-1\n  action: goal_created\n" in (
        log_text
    )
    # Multi-line summaries stay literal blocks; non-ASCII text is written as is.
    assert "summary: |\n        Initial alignment" in state_text
    assert "Wrong granularity — split" in state_text


def test_an_exported_file_passes_liza_validate_file(manage, valid_dir, tmp_path):
    manage("liza_import", str(valid_dir), project="valid")
    manage("liza_export", str(tmp_path / "valid"), project="valid")

    valid = manage("liza_validate", file=str(tmp_path / "valid" / ".liza" / "state.yaml"))

    assert (valid.code, valid.out_lines) == (0, ["VALID"])


def test_a_state_the_original_rejects_is_not_exported(manage, example_dir, tmp_path):
    # SPEC §13: seed 002's example as written breaks two of the original's own rules.
    manage("liza_import", str(example_dir), project="example", lenient=True)

    run = manage("liza_export", str(tmp_path / "out"), project="example")

    assert run.code == 1
    assert run.err_lines[:2] == [
        "INVALID for the original Liza: task-7: CLAIMED task must have lease_expires "
        "(lease_expires is missing)",
        "INVALID for the original Liza: agent coder-1: No two agents assigned to same task: an "
        "agent may hold at most one CLAIMED/READY_FOR_REVIEW/REJECTED task (holds task-2 "
        "(REJECTED), task-7 (CLAIMED), task-8 (READY_FOR_REVIEW))",
    ]
    assert "export refused" in run.err and "nothing was written" in run.err
    assert not (tmp_path / "out").exists()


def test_history_and_log_keep_append_order_not_time_order(manage, tmp_path):
    # Two agents' clocks disagree: entries were appended out of time order. The file's order
    # is the record; sorting it by time would rewrite history.
    state = base_state()
    task_entry(state, "t-1")["history"] = [
        {"time": "2025-01-17T14:09:00Z", "event": "claimed", "agent": "coder-1"},
        {"time": "2025-01-17T14:07:00Z", "event": "pre_execution_checkpoint", "agent": "coder-1"},
        {"time": "2025-01-17T14:08:00Z", "event": "note", "agent": "coder-1"},
    ]
    log = [
        {
            "timestamp": "2025-01-17T14:09:00Z",
            "agent": "coder-1",
            "action": "claimed",
            "task": "t-1",
            "detail": "Claimed",
        },
        {
            "timestamp": "2025-01-17T14:01:00Z",
            "agent": "planner-1",
            "action": "goal_created",
            "detail": "Goal",
        },
    ]
    manage("liza_import", str(write_liza(tmp_path / "in", state, log)), project="one")

    manage("liza_export", str(tmp_path / "out"), project="one")

    exported = yaml.safe_load((tmp_path / "out" / ".liza" / "state.yaml").read_text())
    history = next(t for t in exported["tasks"] if t["id"] == "t-1")["history"]
    assert [e["event"] for e in history] == ["claimed", "pre_execution_checkpoint", "note"]
    exported_log = yaml.safe_load((tmp_path / "out" / ".liza" / "log.yaml").read_text())
    assert [e["action"] for e in exported_log] == ["claimed", "goal_created"]


def test_an_agent_that_left_is_not_in_the_exported_registry(manage, world, original_liza, tmp_path):
    """The original Liza deletes an agent's registry entry when its supervisor exits: an agent
    that left (`agent_leave`) and has not registered since is not in `agents`; what it did
    stays in the tasks' history and the log. The file passes the original validator, imports,
    and exports again to the same bytes."""
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    sprints.sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.unclaimed("t-1")
    world.claim("t-1", "coder-2")
    agent_handoff(
        agent=world.agent("coder-2"),
        task=world.task("t-1"),
        now=world.tick(),
        summary="Context full",
        next_action="Carry on",
    )
    agent_leave(project=world.project, agent=world.agent("coder-2"), now=world.tick())
    agent_leave(project=world.project, agent=world.agent("code-reviewer-2"), now=world.tick())

    first = write_liza_dir(world.project, tmp_path / "first")

    state = yaml.safe_load((tmp_path / "first" / ".liza" / "state.yaml").read_text())
    registry = set(state["agents"])
    assert {"coder-1", "code-reviewer-1"} <= registry
    assert not registry & {"coder-2", "code-reviewer-2"}
    (task,) = state["tasks"]
    assert (task["status"], task["assigned_to"]) == ("CLAIMED", "coder-2")  # its handoff waits
    assert "coder-2" in {e["agent"] for e in task["history"]}
    log = yaml.safe_load((tmp_path / "first" / ".liza" / "log.yaml").read_text())
    assert {"coder-2", "code-reviewer-2"} <= {e["agent"] for e in log}
    judged = original_liza.validate(tmp_path / "first")
    assert judged.returncode == 0 and judged.stdout.strip().endswith("VALID"), judged.stdout

    again = manage("liza_import", str(first[0].parent.parent), project="two")
    second = manage("liza_export", str(tmp_path / "second"), project="two")

    assert (again.code, second.code) == (0, 0), again.err
    assert export_texts(tmp_path / "first") == export_texts(tmp_path / "second")
    two = Project.objects.get(slug="two")
    assert set(two.agents.values_list("agent_id", flat=True)) == registry
