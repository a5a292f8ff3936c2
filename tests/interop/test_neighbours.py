"""Importers for the neighbouring systems (SPEC §12, neighbour-seeds.md §2.1–2.2, F-23).

`liza_import --from codeagent AGENT_STATE.json` (seed 001) and `--from logist job_manifest.json`
(seed 004): states follow docs/liza-files.md's tables, criticality and the approval gate are
carried over, an unknown state refuses the whole file, the result is VALID, hostile files get
the same refusals as state.yaml, and a Logist job goes back to its manifest.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from boards.coordination.models.tasks import Task
from boards.interop.neighbours import CODEAGENT_STATES, LOGIST_DEPRECATED, LOGIST_STATES
from tests.interop.test_importing import row_counts

pytestmark = pytest.mark.django_db

FILES = Path(__file__).resolve().parent / "files"
AGENT_STATE = FILES / "codeagent" / "AGENT_STATE.json"


def manifest(job: str) -> Path:
    return FILES / "logist" / job / "job_manifest.json"


def tasks_of(slug: str) -> dict[str, Task]:
    return {t.key: t for t in Task.objects.filter(project__slug=slug)}


# -- seed 001: codeagent-wrapper ----------------------------------------------------------------

# task → (codeagent status, Liza status, criticality, what carries the gap)
CODEAGENT_EXPECTED = {
    "1": ("completed", "MERGED", "standard", ""),
    "2": ("not_started", "UNCLAIMED", "standard", ""),
    "3": ("in_progress", "BLOCKED", "security-sensitive", "while in_progress"),
    "4": ("under_review", "READY_FOR_REVIEW", "complex", ""),
    "5": ("pending_review", "BLOCKED", "standard", "records no commit to review"),
    "8": ("final_review", "READY_FOR_REVIEW", "standard", ""),
    "6": ("fix_required", "REJECTED", "complex", "Half-open state never closes; no test"),
    "7": ("blocked", "BLOCKED", "standard", "per tenant or per user"),
}


def test_every_codeagent_status_of_the_table_is_in_the_fixture():
    assert {status for status, *_ in CODEAGENT_EXPECTED.values()} == set(CODEAGENT_STATES)


def test_a_codeagent_state_imports_by_the_table_and_is_valid(manage):
    run = manage("liza_import", str(AGENT_STATE), project="ca", **{"from": "codeagent"})

    assert run.code == 0, run.err
    assert run.out_lines == ["Imported 8 tasks, 0 agents, 8 events into project ca"]
    tasks = tasks_of("ca")
    for key, (_, status, criticality, says) in CODEAGENT_EXPECTED.items():
        task = tasks[key]
        assert (task.status, task.criticality) == (status, criticality), key
        assert says in f"{task.blocked_reason} {task.rejection_reason}", key
    assert tasks["4"].review_commit == "4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a"
    assert tasks["7"].blocked_questions == ["Per tenant or per user?"]
    assert [d.key for d in tasks["2"].depends_on.all()] == ["1"]
    assert tasks["1"].events.get(action="imported").data["source"]["status"] == "completed"
    assert manage("liza_validate", project="ca").out_lines == ["VALID"]


def test_re_execute_imports_a_run_in_progress_unclaimed(manage):
    manage("liza_import", str(AGENT_STATE), project="ca", re_execute=True, **{"from": "codeagent"})

    assert tasks_of("ca")["3"].status == "UNCLAIMED"


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda d: d["tasks"][0].update(status="done"), 'tasks #1: status: "done" is not a'),
        (lambda d: d["tasks"][1].update(criticality="high"), 'tasks #2: criticality: "high"'),
        (lambda d: d["tasks"][2].pop("task_id"), "tasks #3: task_id: missing"),
        (
            lambda d: d["tasks"][1].update(dependencies=["9"]),
            "(as state.yaml): task 2: depends_on: names 9",
        ),
        (lambda d: d.update(tasks={"1": {}}), "tasks: must be a list"),
    ],
    ids=["unknown status", "unknown criticality", "no task id", "unknown dependency", "shape"],
)
def test_a_bad_codeagent_state_refuses_the_whole_file(manage, tmp_path, spoil, says):
    document = json.loads(AGENT_STATE.read_text(encoding="utf-8"))
    spoil(document)
    path = tmp_path / "AGENT_STATE.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    run = manage("liza_import", str(path), project="ca", **{"from": "codeagent"})

    assert run.code == 1 and says in run.err, run.err
    assert str(path) in run.err and "Traceback" not in run.err
    assert set(row_counts().values()) == {0}


# -- seed 004: Logist ---------------------------------------------------------------------------

# job → (Liza status, needs_human_approval, suspended, manifest status on the way back: the
# job's own while the task is untouched, a deprecated one migrated)
LOGIST_EXPECTED = {
    "draft-job": ("DRAFT", False, False, "DRAFT"),
    "sample-implementation": ("UNCLAIMED", False, False, "PENDING"),
    "executing-job": ("BLOCKED", False, False, "EXECUTING"),
    "done-job": ("MERGED", False, False, "SUCCESS"),
    "gated-job": ("BLOCKED", True, False, "APPROVAL_REQUIRED"),
    "gated-commit-job": ("READY_FOR_REVIEW", True, False, "APPROVAL_REQUIRED"),
    "error-job": ("BLOCKED", False, False, "INTERVENTION_REQUIRED"),
    "held-job": ("UNCLAIMED", False, True, "SUSPENDED"),
    "canceled-job": ("ABANDONED", False, False, "CANCELED"),
    # Deprecated states, migrated as seed 004 §8 says.
    "running-job": ("BLOCKED", False, False, "INTERVENTION_REQUIRED"),
    "paused-job": ("UNCLAIMED", False, True, "SUSPENDED"),
    "reviewing-job": ("BLOCKED", False, False, "INTERVENTION_REQUIRED"),
    "review-required-job": ("BLOCKED", False, False, "INTERVENTION_REQUIRED"),
    "failed-job": ("ABANDONED", False, False, "CANCELED"),
    "halted-job": ("BLOCKED", False, False, "INTERVENTION_REQUIRED"),  # the old budget halt
}


def test_the_fixtures_cover_every_logist_state_but_the_step_phases():
    statuses = {json.loads(manifest(job).read_text())["status"] for job in LOGIST_EXPECTED}
    step_phases = {"PROVISIONING", "RECOVERING", "HARVESTING"}  # mapped like EXECUTING
    assert statuses | step_phases >= set(LOGIST_STATES)
    # HALTED_TIME and HALTED_ITERATION take HALTED_COST's path.
    assert set(LOGIST_DEPRECATED) - statuses == {"HALTED_TIME", "HALTED_ITERATION"}


@pytest.mark.parametrize("job", list(LOGIST_EXPECTED))
def test_a_logist_manifest_imports_by_the_table_and_is_valid(manage, job):
    status, gated, suspended, _ = LOGIST_EXPECTED[job]

    run = manage("liza_import", str(manifest(job)), project="job", **{"from": "logist"})

    assert run.code == 0, run.err
    task = tasks_of("job")[job]
    assert (task.status, task.needs_human_approval, task.suspended_at is not None) == (
        status,
        gated,
        suspended,
    )
    assert manage("liza_validate", project="job").out_lines == ["VALID"]
    if job == "halted-job":
        assert task.blocked_reason == "budget_cost"


@pytest.mark.parametrize("job", list(LOGIST_EXPECTED))
def test_a_logist_job_goes_back_to_its_manifest(manage, tmp_path, job):
    original = manifest(job).read_text(encoding="utf-8")
    manage("liza_import", str(manifest(job)), project="one", **{"from": "logist"})
    first = manage("liza_export", str(tmp_path / "first"), project="one", to="logist")
    written = tmp_path / "first" / job / "job_manifest.json"
    manage("liza_import", str(written), project="two", **{"from": "logist"})
    manage("liza_export", str(tmp_path / "second"), project="two", to="logist")

    assert first.code == 0 and first.out_lines == [str(written)]
    back = json.loads(written.read_text(encoding="utf-8"))
    assert back["status"] == LOGIST_EXPECTED[job][3]
    if back["status"] == json.loads(original)["status"]:  # a state both sides have: the same file
        assert written.read_text(encoding="utf-8") == original
    else:  # a step phase or a deprecated state: everything else kept
        assert {k: v for k, v in back.items() if k != "status"} == {
            k: v for k, v in json.loads(original).items() if k != "status"
        }
    second = tmp_path / "second" / job / "job_manifest.json"
    assert second.read_text(encoding="utf-8") == written.read_text(encoding="utf-8")


def test_an_unknown_logist_state_refuses_the_file(manage):
    run = manage("liza_import", str(manifest("unknown-job")), project="job", **{"from": "logist"})

    assert run.code == 1
    assert f'{manifest("unknown-job")}: status: "DONE" is not a Logist state' in run.err
    assert set(row_counts().values()) == {0}


@pytest.mark.parametrize("source", ["codeagent", "logist"])
@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_text('{"job_id": "a", "job_id": "b"}'), "duplicate key 'job_id'"),
        (lambda p: os.mkfifo(p), "is a FIFO; only regular files are read"),
        (lambda p: p.symlink_to("/dev/zero"), "is a symbolic link"),
        (lambda p: p.write_text("[1, 2]"), "top level: must be a JSON object"),
    ],
    ids=["duplicate key", "fifo", "symlink", "not an object"],
)
def test_a_hostile_foreign_file_is_refused_like_state_yaml(manage, tmp_path, source, make, says):
    path = tmp_path / "state.json"
    make(path)

    run = manage("liza_import", str(path), project="x", **{"from": source})

    assert run.code == 1 and f"{path}: " in run.err and says in run.err, run.err
    assert set(row_counts().values()) == {0}
