"""What the original file-based Liza's own scripts write imports with --lenient (SPEC §8, §13).

`files/original-v0.1.1` is a blackboard as liza-init, liza-add-task, liza-agent, the claim,
submit, verdict and merge scripts leave it: the original's validator accepts it; a strict import
names each gap and writes nothing; --lenient imports it with one WARNING line per item, and what
it exports passes the original's validator and is byte-stable from then on.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from agents.models import Agent
from boards.coordination.models.projects import Goal
from boards.coordination.models.tasks import Task
from tests.interop.test_importing import row_counts

pytestmark = pytest.mark.django_db

ORIGINAL = Path(__file__).resolve().parent / "files" / "original-v0.1.1"
STATE = ORIGINAL / ".liza" / "state.yaml"

WARNINGS = [
    f"WARNING: {STATE}: config: planner_poll_interval: not a key Liza Board keeps; left out",
    f"WARNING: {STATE}: config: planner_max_wait: not a key Liza Board keeps; left out",
    f"WARNING: {STATE}: config: reviewer_poll_interval: not a key Liza Board keeps; left out",
    f"WARNING: {STATE}: config: reviewer_max_wait: not a key Liza Board keeps; left out",
    f"WARNING: {STATE}: goal: description: empty; imported with an empty description",
    f"WARNING: {STATE}: agent coder-2: role: missing; read as coder, from the agent id",
]


def test_the_original_accepts_the_fixture(original_liza, tmp_path):
    shutil.copytree(ORIGINAL, tmp_path / "original")

    run = original_liza.validate(tmp_path / "original")

    assert run.returncode == 0 and run.stdout.strip().endswith("\nVALID"), run.stdout


def test_a_strict_import_names_each_gap_and_writes_nothing(manage):
    run = manage("liza_import", str(ORIGINAL), project="strict")

    assert run.code == 1
    assert run.err_lines[:2] == [
        f"{STATE}: goal: description: empty (--lenient: imported with an empty description)",
        f"{STATE}: agent coder-2: role: missing (--lenient: read as coder, from the agent id)",
    ]
    assert set(row_counts().values()) == {0}


def test_lenient_imports_what_the_original_writes_with_a_warning_per_item(manage):
    run = manage("liza_import", str(ORIGINAL), project="lenient", lenient=True)

    assert run.code == 0, run.err
    assert run.out_lines[0] == "Imported 2 tasks, 3 agents, 8 events into project lenient"
    assert run.out_lines[1:-1] == WARNINGS
    # Our own rule (an agent's role must match its id) still reports the file's gap.
    assert run.out_lines[-1].startswith("INVALID: agent coder-2: Agent id must be")
    agents = {a.agent_id: a.role for a in Agent.objects.filter(project__slug="lenient")}
    assert agents == {
        "planner-1": "planner",
        "code-reviewer-1": "code_reviewer",
        "coder-2": "coder",
    }
    assert Goal.objects.get(project__slug="lenient").description == ""
    merged = Task.objects.get(project__slug="lenient", key="retry-get")
    assert merged.approved_by == ["code-reviewer-1"]


def test_the_lenient_import_exports_for_the_original_byte_stably(manage, original_liza, tmp_path):
    manage("liza_import", str(ORIGINAL), project="one", lenient=True)
    first = manage("liza_export", str(tmp_path / "first"), project="one")
    again = manage("liza_import", str(tmp_path / "first"), project="two", lenient=True)
    second = manage("liza_export", str(tmp_path / "second"), project="two")

    assert (first.code, again.code, second.code) == (0, 0, 0), first.err + again.err
    texts = [
        (root / ".liza" / name).read_text(encoding="utf-8")
        for root in (tmp_path / "first", tmp_path / "second")
        for name in ("state.yaml", "log.yaml")
    ]
    assert texts[:2] == texts[2:]
    state = yaml.safe_load(texts[0])
    merged = next(t for t in state["tasks"] if t["id"] == "retry-get")
    # The keys the original's scripts wrote empty are written back as they were.
    assert (merged["worktree"], merged["reviewing_by"], merged["rejection_reason"]) == (
        None,
        None,
        None,
    )
    assert merged["depends_on"] == [] and merged["approved_by"] == "code-reviewer-1"
    # log.yaml keeps its four entries in order; the histories' entries stay in the histories.
    assert [e["action"] for e in yaml.safe_load(texts[1])] == [
        "initialized",
        "task_added",
        "task_added",
        "merged",
    ]
    run = original_liza.validate(tmp_path / "first")
    assert run.returncode == 0 and run.stdout.strip().endswith("VALID"), run.stdout
    assert manage(
        "liza_validate", file=str(tmp_path / "first" / ".liza" / "state.yaml")
    ).out_lines == ["VALID"]
